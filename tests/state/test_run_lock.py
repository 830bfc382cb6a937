"""Locking a run: the scheduler's pass skips a run another process holds; a supervisor's pass
after its try's end waits for it."""

from __future__ import annotations

import threading

import pytest

from state.core.db import session_scope
from state.core.models import DagModel, DagRun
from state.engine.scheduling import Enqueue, pass_after_end, try_schedule_run
from tests.stores import migrated

pytestmark = pytest.mark.integration


def _a_run(url: str) -> int:
    migrated(url)
    with session_scope(url) as session:
        session.add(
            DagModel(
                dag_id="d", fileloc="f.py", structure={"dag_id": "d", "tasks": {}}, version_hash="h"
            )
        )
        run = DagRun(dag_id="d", run_id="r", state="running")
        session.add(run)
        session.flush()
        return run.id


def test_skip_locked_while_held_and_wait_until_released(pg_url: str) -> None:
    run_pk = _a_run(pg_url)
    got: list[list[Enqueue]] = []
    with session_scope(pg_url) as holder:
        assert try_schedule_run(holder, run_pk) is not None  # a pass ran: it holds the run
        with session_scope(pg_url) as other:
            assert try_schedule_run(other, run_pk) is None  # the scheduler moves on

        def wait() -> None:
            with session_scope(pg_url) as waiter:
                got.append(pass_after_end(waiter, run_pk))

        waiter = threading.Thread(target=wait)
        waiter.start()
        waiter.join(0.5)
        assert waiter.is_alive() and not got  # still waiting while the holder has it
    waiter.join(10)
    assert got == [[]]  # it ran once the holder let go (the run has no task to queue)
