"""A task process's environment and session, through a real fleet (issue 26).

A task process needs neither the store's nor the broker's URL (it asks its supervisor for what it
needs), so its environment holds neither; and whatever it starts, in its session or another
(``setsid``), ends with its try, however the try ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select

from state.core.db import session_scope
from state.core.enums import TaskInstanceState
from state.core.models import DagRun, TaskInstance
from state.records.marking import mark_task_instances
from tests.integration.conftest import Fleet
from tests.integration.test_worker_shutdown import _gone

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

DAGS = Path(__file__).parent / "hostile_dags"
API_KEY = "an-api-signing-key-of-forty-characters!!"


@pytest.fixture
def hostile(make_fleet: Callable[..., Fleet]) -> Fleet:
    fleet = make_fleet(DAGS, TRADEWIND_API_SECRET_KEY=API_KEY)
    # The store's URL under a name of the operator's own: left out for its value.
    fleet.env["REPORTING_DB"] = fleet.url
    return fleet


def test_a_task_s_environment_holds_no_store_or_broker_url(hostile: Fleet) -> None:
    hostile.start_worker()
    hostile.start_scheduler()
    hostile.trigger("environment", "r1")
    hostile.wait_run("environment", "r1", timeout=120)
    written = hostile.home / "environ"
    hostile.wait_for(lambda: (written / "runtime").exists(), 30, "the runtime task's env")

    secrets = [hostile.url, hostile.env["TRADEWIND_BROKER_URL"], API_KEY]
    names = ["TRADEWIND_DATABASE_URL", "TRADEWIND_BROKER_URL", "TRADEWIND_API_SECRET_KEY"]
    for name in ("python", "python-parent", "python-os-environ", "runtime"):
        environment = (written / name).read_bytes().decode()
        assert f"TRADEWIND_HOME={hostile.home}" in environment.replace('": "', "=")
        for hidden in [*secrets, *names, "REPORTING_DB"]:
            assert hidden not in environment, f"{hidden} is in the environment of {name}"
    assert hostile.task_states("environment", "r1")["python_task"] == ("success", 1)
    seen = json.loads(hostile.xcom("environment", "r1", "python_task") or "[]")
    assert "TRADEWIND_HOME" in seen
    assert not {*names, "REPORTING_DB"} & set(seen)


def _leftover(fleet: Fleet, task_id: str) -> Path:
    return fleet.home / "leftovers" / task_id


LEFTOVERS = ["succeeds", "fails", "times_out", "is_stopped", "runtime"]


def test_what_a_try_left_in_another_session_ends_with_it(hostile: Fleet) -> None:
    hostile.start_worker()
    hostile.start_scheduler()
    hostile.trigger("leftovers", "r1")
    pids: dict[str, int] = {}
    try:
        hostile.wait_for(lambda: _leftover(hostile, "is_stopped").exists(), 60, "is_stopped")
        pids["is_stopped"] = int(_leftover(hostile, "is_stopped").read_text())
        assert not _gone(pids["is_stopped"])  # it runs while its try does
        with session_scope(hostile.url) as session:
            run = session.scalars(select(DagRun).filter_by(dag_id="leftovers")).one()
            ti = session.scalars(select(TaskInstance).filter_by(task_id="is_stopped")).one()
            mark_task_instances(session, run, [ti], TaskInstanceState.FAILED)

        assert hostile.wait_run("leftovers", "r1", timeout=120) == "failed"

        states = {k: v[0] for k, v in hostile.task_states("leftovers", "r1").items()}
        assert states == {
            "succeeds": "success",
            "fails": "failed",
            "times_out": "failed",
            "is_stopped": "failed",
            "runtime": "failed",  # sh says nothing to its supervisor: no outcome
        }
        for task_id in LEFTOVERS:
            pids[task_id] = int(_leftover(hostile, task_id).read_text())
        for task_id, pid in pids.items():
            hostile.wait_for(lambda pid=pid: _gone(pid), 30, f"{task_id}'s setsid leftover to go")
    finally:
        for pid in pids.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
