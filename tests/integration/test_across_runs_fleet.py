"""Across runs and on a run's life, through the real fleet (scheduler and Celery worker on
PostgreSQL + Redis): ``depends_on_past`` over three runs, and ``dagrun_timeout`` stopping a try."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select

from state.core.db import session_scope
from state.core.enums import TaskInstanceState
from state.core.models import DagRun, TaskInstance
from state.records.marking import mark_task_instances
from tests.integration.conftest import Fleet

pytestmark = pytest.mark.integration

DAGS = Path(__file__).parent / "across_dags"


@pytest.fixture
def fleet(make_fleet: Callable[..., Fleet]) -> Fleet:
    running = make_fleet(DAGS)
    running.start_worker()
    running.start_scheduler()
    return running


def step_state(fleet: Fleet, run_id: str) -> str:
    return fleet.task_states("past_chain", run_id)["step"][0]


def stays(fleet: Fleet, run_id: str, state: str, seconds: float) -> None:
    """The run's step is in ``state`` all along ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert step_state(fleet, run_id) == state
        time.sleep(0.2)


def test_depends_on_past_holds_each_run_until_the_previous_one_succeeds(
    fleet: Fleet, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    fleet.trigger("past_chain", "r1", {"wait_for": str(release)})
    fleet.wait_for(lambda: step_state(fleet, "r1") == "running", what="r1's step running")
    fleet.trigger("past_chain", "r2", {"fail": True})
    stays(fleet, "r2", "none", 3)  # r1's step is still running
    release.touch()
    assert fleet.wait_run("past_chain", "r1") == "success"
    assert fleet.wait_run("past_chain", "r2") == "failed"  # it ran once r1's step succeeded
    fleet.trigger("past_chain", "r3", {})
    stays(fleet, "r3", "none", 3)  # held by r2's failure
    with session_scope(fleet.url) as session:
        run = session.scalars(select(DagRun).filter_by(dag_id="past_chain", run_id="r2")).one()
        ti = session.scalars(select(TaskInstance).filter_by(run_id="r2", task_id="step")).one()
        mark_task_instances(session, run, [ti], TaskInstanceState.SUCCESS)
    assert fleet.wait_run("past_chain", "r3") == "success"


def test_dagrun_timeout_fails_the_run_and_stops_its_running_try(
    fleet: Fleet, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    fleet.trigger("run_timeout", "r1", {"pid_file": str(pid_file)})
    fleet.wait_for(pid_file.exists, timeout=30, what="the task's pid")
    pid = int(pid_file.read_text())
    assert fleet.wait_run("run_timeout", "r1", timeout=60) == "failed"
    assert fleet.task_states("run_timeout", "r1")["sleepy"][0] == "skipped"
    fleet.wait_for(lambda: gone(pid), timeout=20, what=f"the task process {pid} to end")
    assert "timed out (dagrun_timeout)" in fleet.log("scheduler")


def test_fail_fast_stops_the_running_try_and_skips_what_has_not_run(
    fleet: Fleet, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    fleet.trigger("fail_fast_run", "r1", {"pid_file": str(pid_file)})
    fleet.wait_for(pid_file.exists, timeout=30, what="the task's pid")
    pid = int(pid_file.read_text())
    assert fleet.wait_run("fail_fast_run", "r1", timeout=60) == "failed"
    states = {
        task_id: state for task_id, (state, _) in fleet.task_states("fail_fast_run", "r1").items()
    }
    assert states == {"bad": "failed", "sleepy": "failed", "after": "skipped"}
    fleet.wait_for(lambda: gone(pid), timeout=20, what=f"the task process {pid} to end")


def gone(pid: int) -> bool:
    """Whether ``pid`` has exited (a zombie not yet reaped has too)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    state = next(line for line in status.splitlines() if line.startswith("State:"))
    return "Z" in state.split()[1] or not _exists(pid)


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
