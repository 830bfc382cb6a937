"""Locking a run: the scheduler skips a run another process holds; a supervisor waits for it."""

from __future__ import annotations

import threading

import pytest

from state.db import session_scope
from state.migrate import upgrade
from state.models import DagModel, DagRun
from state.scheduling import lock_run

pytestmark = pytest.mark.integration


def _a_run(url: str) -> int:
    upgrade(url)
    with session_scope(url) as session:
        session.add(DagModel(dag_id="d", fileloc="f.py", structure={"tasks": {}}, version_hash="h"))
        run = DagRun(dag_id="d", run_id="r", state="running")
        session.add(run)
        session.flush()
        return run.id


def test_skip_locked_while_held_and_wait_until_released(pg_url: str) -> None:
    run_pk = _a_run(pg_url)
    got: list[DagRun | None] = []
    with session_scope(pg_url) as holder:
        assert lock_run(holder, run_pk) is not None
        with session_scope(pg_url) as other:
            assert lock_run(other, run_pk) is None  # the scheduler moves on

        def wait() -> None:
            with session_scope(pg_url) as waiter:
                got.append(lock_run(waiter, run_pk, wait=True))

        waiter = threading.Thread(target=wait)
        waiter.start()
        waiter.join(0.5)
        assert waiter.is_alive() and not got  # still waiting while the holder has it
    waiter.join(10)
    assert got and got[0] is not None and got[0].id == run_pk
