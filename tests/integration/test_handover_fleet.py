"""Task details of any size reach the task process; no hand-over waits for ever (issue 26).

Through a real fleet on PostgreSQL + Redis. A try's details (its run's conf, its DAG's params)
once travelled in one SOCK_SEQPACKET packet read with a 64 KiB buffer: past 64 KiB every task
failed with ``exit code 70``; past ~208 KiB the try hung ``running`` for ever, heartbeating, and
neither SIGTERM nor SIGQUIT stopped the worker.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.conftest import Fleet
from tests.integration.test_worker_shutdown import _children, _fork_servers, _gone, _tree

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

DAGS = Path(__file__).parent / "hostile_dags"


def _seen(value: str) -> str:
    return f"{len(value)} {hashlib.sha256(value.encode()).hexdigest()}"


@pytest.fixture
def hostile(make_fleet: Callable[..., Fleet]) -> Fleet:
    return make_fleet(DAGS)


def _xcom(fleet: Fleet, dag_id: str, task_id: str, run_id: str = "r1") -> object:
    return json.loads(fleet.xcom(dag_id, run_id, task_id) or "null")


@pytest.mark.parametrize("size", [100_000, 1_000_000])
def test_a_large_conf_reaches_the_task(hostile: Fleet, size: int) -> None:
    hostile.start_worker(concurrency=1)
    hostile.start_scheduler()
    blob = "c" * size
    hostile.trigger("big_conf", "r1", conf={"blob": blob})

    assert hostile.wait_run("big_conf", "r1", timeout=120) == "success"
    assert _xcom(hostile, "big_conf", "read_conf") == _seen(blob)  # dag_run.conf
    assert _xcom(hostile, "big_conf", "read_conf_param") == _seen(blob)  # params, merged


def test_a_large_params_default_reaches_the_task(hostile: Fleet) -> None:
    hostile.start_worker(concurrency=1)
    hostile.start_scheduler()
    hostile.trigger("big_params_default", "r1")

    assert hostile.wait_run("big_params_default", "r1", timeout=120) == "success"
    assert _xcom(hostile, "big_params_default", "read_default") == _seen("p" * 300_000)


def _stop_the_fork_server(worker: int) -> int:
    """SIGSTOP the worker's one fork server once its spare is handed over: the try that takes
    that spare runs, the next one waits for a spare that never comes."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        servers = _fork_servers(worker)
        if servers and _children(servers[0]):
            os.kill(servers[0], signal.SIGSTOP)
            return servers[0]
        time.sleep(0.1)
    raise AssertionError("the worker's fork server and its spare never came up")


def test_a_hand_over_that_cannot_complete_fails_its_try_with_the_reason(hostile: Fleet) -> None:
    hostile.env["TRADEWIND_TASK_START_TIMEOUT_SECONDS"] = "5"
    worker = hostile.start_worker(concurrency=1)
    stuck = _stop_the_fork_server(worker.pid)
    hostile.start_scheduler()
    hostile.trigger("two_steps", "r1")

    assert hostile.wait_run("two_steps", "r1", timeout=90) == "failed"

    tis = hostile.task_instances("two_steps", "r1")
    assert str(tis["first"].state) == "success"  # it took the spare handed over ahead
    assert str(tis["second"].state) == "failed"
    assert tis["second"].error == (
        "could not start the task: no task process was handed over within 5s "
        "(TRADEWIND_TASK_START_TIMEOUT_SECONDS): the fork server did not answer, and was stopped"
    )
    assert _gone(stuck)
    # The slot goes on with a fresh fork server.
    hostile.trigger("two_steps", "r2")
    assert hostile.wait_run("two_steps", "r2", timeout=90) == "success"


def test_a_warm_shutdown_ends_while_a_hand_over_is_stuck(hostile: Fleet) -> None:
    hostile.env["TRADEWIND_TASK_START_TIMEOUT_SECONDS"] = "10"
    worker = hostile.start_worker(concurrency=1)
    _stop_the_fork_server(worker.pid)
    hostile.start_scheduler()
    hostile.trigger("two_steps", "r1")
    hostile.wait_for(
        lambda: hostile.task_states("two_steps", "r1").get("second", ("",))[0] == "running",
        60,
        "the second try to wait for its task process",
    )
    started = _tree(worker.pid)

    os.kill(worker.pid, signal.SIGTERM)

    assert worker.wait(90) == 0
    tis = hostile.task_instances("two_steps", "r1")
    assert str(tis["second"].state) == "failed"
    assert "no task process was handed over within 10s" in (tis["second"].error or "")
    assert all(_gone(pid) for pid in started), "a process of the worker outlived it"


def test_a_warm_shutdown_lets_a_large_conf_try_in_flight_finish(hostile: Fleet) -> None:
    worker = hostile.start_worker(concurrency=1)
    hostile.start_scheduler()
    blob = "s" * 1_000_000
    hostile.trigger("slow_big_conf", "r1", conf={"blob": blob, "sleep": 3})
    hostile.wait_for(
        lambda: hostile.task_states("slow_big_conf", "r1").get("slow_read", ("",))[0] == "running",
        60,
        "the try to run",
    )

    os.kill(worker.pid, signal.SIGTERM)

    assert worker.wait(90) == 0
    assert hostile.task_states("slow_big_conf", "r1")["slow_read"] == ("success", 1)
    assert _xcom(hostile, "slow_big_conf", "slow_read") == _seen(blob)
