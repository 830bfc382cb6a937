"""Several schedulers on PostgreSQL: every try runs exactly once, and the fleet survives losing one.

Three ``tradewind scheduler`` processes and two Celery workers (prefork, two processes each) on
this machine's PostgreSQL and Redis run 50 runs of a 20-task DAG whose tasks record each
(run, task, try) they execute. Halfway through, one scheduler is killed with SIGKILL.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import func, select

from state.core.db import session_scope
from state.core.models import DagRun, TaskInstance
from state.engine.runs import create_run
from tests.integration.conftest import Fleet

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]
PG_DATABASE_PREFIX = "tw_schedulers_"
DAGS = Path(__file__).parent / "scheduler_dags"
RUNS, TASKS = 50, 20


@pytest.fixture
def fleet(make_fleet: Callable[..., Fleet], tmp_path: Path) -> Fleet:
    return make_fleet(
        DAGS,
        TRADEWIND_ZOMBIE_THRESHOLD_SECONDS="3",
        # Short, so a message a killed scheduler queued in SQL but never sent is re-sent soon.
        TRADEWIND_TASK_QUEUED_TIMEOUT_SECONDS="5",
        TRADEWIND_SCHEDULER_INTERVAL_SECONDS="1",
        SCHEDULER_TEST_RECORD=str(tmp_path / "executions.txt"),
    )


def executions(fleet: Fleet) -> list[tuple[str, ...]]:
    path = Path(fleet.env["SCHEDULER_TEST_RECORD"])
    return [tuple(line.split()) for line in path.read_text().splitlines()] if path.exists() else []


def finished_runs(fleet: Fleet) -> Counter[str]:
    with session_scope(fleet.url) as session:
        rows = session.execute(select(DagRun.state, func.count()).group_by(DagRun.state)).all()
    return Counter({str(state): count for state, count in rows})


def test_three_schedulers_run_every_try_exactly_once_and_survive_a_sigkill(fleet: Fleet) -> None:
    fleet.start_worker("w1", concurrency=2)
    fleet.start_worker("w2", concurrency=2)
    schedulers = [fleet.start_scheduler(f"scheduler{n}") for n in range(3)]
    with session_scope(fleet.url) as session:
        for n in range(RUNS):
            create_run(session, "fan20", run_id=f"r{n:02d}")

    fleet.wait_for(lambda: len(executions(fleet)) >= RUNS * TASKS // 2, 90, "half of the tries")
    os.killpg(schedulers[0].pid, signal.SIGKILL)
    killed_at = len(executions(fleet))

    deadline = time.monotonic() + 90
    while finished_runs(fleet)["success"] + finished_runs(fleet)["failed"] < RUNS:
        assert time.monotonic() < deadline, f"runs still going: {finished_runs(fleet)}"
        time.sleep(0.5)

    assert finished_runs(fleet) == Counter({"success": RUNS})
    ran = executions(fleet)
    assert killed_at < len(ran)  # the two schedulers left did the rest
    duplicates = [key for key, count in Counter(ran).items() if count > 1]
    assert duplicates == []
    with session_scope(fleet.url) as session:
        tries = session.execute(
            select(TaskInstance.run_id, TaskInstance.task_id, TaskInstance.try_number)
        ).all()
    assert len(tries) == RUNS * TASKS
    # Every try a task instance took ran, exactly once; none ran that was not recorded.
    assert sorted(ran) == sorted(
        (run_id, task_id, str(n)) for run_id, task_id, last in tries for n in range(1, last + 1)
    )
    for scheduler in schedulers[1:]:
        assert scheduler.poll() is None, "a surviving scheduler died"
