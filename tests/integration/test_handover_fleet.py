"""Task details of any size reach the task process, through a real fleet (issue 26).

A try's details (its run's conf, its DAG's params) once travelled in one SOCK_SEQPACKET packet
read with a 64 KiB buffer: past 64 KiB every task failed with ``exit code 70``, past ~208 KiB the
try hung ``running`` for ever and the worker could not be stopped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.conftest import Fleet

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

DAGS = Path(__file__).parent / "hostile_dags"


def _seen(value: str) -> str:
    return f"{len(value)} {hashlib.sha256(value.encode()).hexdigest()}"


@pytest.fixture
def hostile(make_fleet: Callable[..., Fleet]) -> Fleet:
    return make_fleet(DAGS)


@pytest.mark.parametrize("size", [100_000, 1_000_000])
def test_a_large_conf_reaches_the_task(hostile: Fleet, size: int) -> None:
    hostile.start_worker(concurrency=1)
    hostile.start_scheduler()
    blob = "c" * size
    hostile.trigger("big_conf", "r1", conf={"blob": blob})

    assert hostile.wait_run("big_conf", "r1", timeout=120) == "success"
    for task_id in ("read_conf", "read_conf_param"):
        assert json.loads(hostile.xcom("big_conf", "r1", task_id) or "null") == _seen(blob)


def test_a_large_params_default_reaches_the_task(hostile: Fleet) -> None:
    hostile.start_worker(concurrency=1)
    hostile.start_scheduler()
    hostile.trigger("big_params_default", "r1")

    assert hostile.wait_run("big_params_default", "r1", timeout=120) == "success"
    seen = json.loads(hostile.xcom("big_params_default", "r1", "read_default") or "null")
    assert seen == _seen("p" * 300_000)
