"""A Tradewind home for one test: a DAGs folder, settings read from it, a migrated SQLite store.

Used by the tests of ``state/``, ``scheduler/`` and ``worker/`` (each folder's conftest makes a
fixture of ``tradewind_home``). Reads go through fresh sessions, so a test sees what is committed,
never an object cached in a session that a conditional UPDATE did not refresh.
"""

from __future__ import annotations

import datetime as dt
import os
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, select

from broker_config import message_of
from scheduler.dag_sync import SyncResult, sync_dags
from state.core.db import get_engine, session_scope, statement_scope
from state.core.enums import DagRunState, TaskInstanceState
from state.core.models import DagModel, DagRun, TaskInstance, XCom
from state.core.transitions import transition_tis
from state.engine.end import Recorded
from state.engine.outcomes import Outcome
from state.engine.runs import create_run
from state.engine.scheduling import CachedDag, Enqueue, schedule_run, schedule_run_by_pk
from state.engine.try_life import HeldTry, claim_try, record
from tests.stores import migrated
from tradewind.settings import Settings, reload_settings

TI = TaskInstanceState


@dataclass
class Home:
    """One test's Tradewind home and the helpers that drive its store."""

    root: Path
    dags: Path
    settings: Settings

    @property
    def url(self) -> str:
        return self.settings.sql_url

    def write_dag(self, source: str, name: str = "dags.py") -> Path:
        path = self.dags / name
        path.write_text(textwrap.dedent(source))
        return path

    def sync(self) -> SyncResult:
        with session_scope(self.url) as session:
            return sync_dags(session, self.dags)

    def trigger(
        self, dag_id: str, conf: dict[str, Any] | None = None, run_id: str | None = None
    ) -> int:
        """Create a run; returns its primary key."""
        with session_scope(self.url) as session:
            run = create_run(session, dag_id, run_id=run_id, conf=conf)
            session.flush()
            return run.id

    def schedule(self, run_pk: int) -> list[Enqueue]:
        with session_scope(self.url) as session:
            return schedule_run_by_pk(session, run_pk)

    def tis(self, run_pk: int) -> dict[str, TaskInstance]:
        """The run's task instances by task id, as committed."""
        with session_scope(self.url) as session:
            run = session.get_one(DagRun, run_pk)
            query = select(TaskInstance).where(
                TaskInstance.dag_id == run.dag_id, TaskInstance.run_id == run.run_id
            )
            return {ti.task_id: ti for ti in session.scalars(query)}

    def ti(self, run_pk: int, task_id: str) -> TaskInstance:
        return self.tis(run_pk)[task_id]

    def states(self, run_pk: int) -> dict[str, TaskInstanceState]:
        return {task_id: TI(ti.state) for task_id, ti in self.tis(run_pk).items()}

    def run(self, run_pk: int) -> DagRun:
        with session_scope(self.url) as session:
            return session.get_one(DagRun, run_pk)

    def run_state(self, run_pk: int) -> DagRunState:
        return DagRunState(self.run(run_pk).state)

    def dag_model(self, dag_id: str) -> DagModel:
        with session_scope(self.url) as session:
            return session.get_one(DagModel, dag_id)

    def xcoms(self, run_pk: int) -> dict[tuple[str, str], str]:
        """Every XCom of the run as ``(task_id, key) -> JSON text``."""
        run = self.run(run_pk)
        with session_scope(self.url) as session:
            query = select(XCom).where(XCom.dag_id == run.dag_id, XCom.run_id == run.run_id)
            return {(x.task_id, x.key): x.value for x in session.scalars(query)}

    def end_try(self, ti_id: int, state: TaskInstanceState, **values: Any) -> None:
        """Play a supervisor: take a queued try to running, then to ``state``."""
        with session_scope(self.url) as session:
            assert transition_tis(session, [ti_id], [TI.QUEUED], TI.RUNNING) == 1
            assert transition_tis(session, [ti_id], [TI.RUNNING], state, values) == 1


@contextmanager
def tradewind_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **env: str) -> Iterator[Home]:
    """Settings pointing at ``tmp_path``; extra ``TRADEWIND_<NAME>`` values from ``env``."""
    for name in [name for name in os.environ if name.startswith("TRADEWIND_")]:
        monkeypatch.delenv(name)
    dags = tmp_path / "dags"
    dags.mkdir()
    monkeypatch.setenv("TRADEWIND_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TRADEWIND_DAGS_FOLDER", str(dags))
    for name, value in env.items():
        monkeypatch.setenv(f"TRADEWIND_{name.upper()}", value)
    settings = reload_settings()
    migrated(settings.sql_url)
    try:
        yield Home(tmp_path, dags, settings)
    finally:
        get_engine(settings.sql_url).dispose()
        monkeypatch.undo()
        reload_settings()


class StatementCounter:
    """The SQL statements sent on ``url``'s engine while it listens (BEGIN and PRAGMA aside)."""

    def __init__(self, url: str) -> None:
        self.engine = get_engine(url)
        self.statements: list[str] = []
        event.listen(self.engine, "before_cursor_execute", self._count)

    def _count(self, conn: object, cursor: object, statement: str, *args: object) -> None:
        if not statement.startswith(("BEGIN", "PRAGMA")):
            self.statements.append(" ".join(statement.split()))

    def close(self) -> None:
        event.remove(self.engine, "before_cursor_execute", self._count)


def end_claimed(url: str, held: HeldTry, outcome: Outcome) -> Recorded:
    """End a held try as its supervisor does (``state.engine.try_life.record``): whether the end was
    recorded, and what it queued."""
    ended = record(url, held, outcome)
    return Recorded(ended.recorded, ended.enqueued)


def claim(home: Home, enqueue: Enqueue) -> HeldTry:
    """Claim a queued try as its worker does; the held try."""
    with statement_scope(home.url) as session:
        claimed = claim_try(session, message_of(enqueue))
    assert isinstance(claimed, HeldTry), claimed
    return claimed


def schedule(home: Home, run_pk: int, now: dt.datetime | None = None) -> list[Enqueue]:
    """One scheduling pass over the run (as of ``now``); the tries it queued."""
    with session_scope(home.url) as session:
        run = session.get_one(DagRun, run_pk, with_for_update=True)
        dag = CachedDag.of(session.get_one(DagModel, run.dag_id))
        return schedule_run(session, run, dag, now) if now else schedule_run(session, run, dag)


@contextmanager
def counting_statements(url: str) -> Iterator[StatementCounter]:
    """A ``StatementCounter`` on ``url`` for the ``with`` block."""
    counter = StatementCounter(url)
    try:
        yield counter
    finally:
        counter.close()


# Chains, a fork, an alert on failure, and runs sharing the one slot of pool "solo": the DAGs of
# the tests of a try's end and the pass that follows it.
HAND_OVER_DAGS = """
from tradewind import DAG, task

@task
def step():
    pass

with DAG("chain"):
    step.override(task_id="a")() >> step.override(task_id="b")() >> step.override(task_id="c")()

with DAG("fork"):
    a = step.override(task_id="a")()
    a >> step.override(task_id="b")()
    a >> step.override(task_id="c")()

with DAG("solo_chain", max_active_runs=4):
    step.override(task_id="a", pool="solo")() >> step.override(task_id="b", pool="solo")()

with DAG("alerting"):
    step.override(task_id="a")() >> step.override(task_id="alert", trigger_rule="one_failed")()

with DAG("solo_side"):
    step.override(task_id="a", pool="solo")() >> step.override(task_id="b", pool="solo")()
    step.override(task_id="c", pool="solo")()
"""
