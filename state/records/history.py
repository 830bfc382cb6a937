"""Deleting ended history, a bounded batch at a time: ``tradewind db clean`` and the retention
the scheduler applies (``TRADEWIND_HISTORY_RETENTION_DAYS``).

What goes: runs that ended (success or failed) before a time, with the rows kept for them
(``RUN_TABLES``), and the rows of tables that age on their own clock (``AGED_TABLES``: asset
events, the event log), older than that time. A run still running, queued or newer is never
read past its row: the runs are chosen first, and every other row is found from them.

Each batch is one short transaction: it locks at most ``RUNS_PER_BATCH`` runs (``FOR UPDATE
SKIP LOCKED``: a run a clear or a scheduler holds is left for the next batch, and neither waits
on this), deletes at most ``max_rows`` rows by primary key, and deletes the runs themselves only
once nothing of theirs is left. On a store holding millions of task instances, one
``DELETE ... WHERE end_date < ...`` would hold its locks (and the WAL) for minutes; batches of
a few thousand rows hold them for milliseconds, so a running fleet never waits on the clean.

A table another feature adds is one more entry in ``RUN_TABLES`` (its rows belong to a run) or
``AGED_TABLES`` (its rows carry their own time).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy import ColumnElement, and_, delete, exists, func, select, tuple_
from sqlalchemy.orm import InstrumentedAttribute, Session, aliased

from state.core import (
    AssetEvent,
    BackfillDagRun,
    DagRun,
    DagRunState,
    EventLog,
    HITLDetail,
    PartitionEventQueue,
    PartitionKeyLog,
    TaskInstance,
    TaskInstanceHistory,
    TaskInstanceState,
    TaskStateValue,
    XCom,
    session_scope,
)
from state.records.values import refers_to_object

#: How many runs one batch locks: with ``max_rows`` it bounds what one transaction holds.
RUNS_PER_BATCH = 200
#: How many rows one batch deletes by default (a few milliseconds of locks on PostgreSQL).
DEFAULT_MAX_ROWS = 5000
ENDED = (DagRunState.SUCCESS, DagRunState.FAILED)
#: A try in these states may still write: its run is kept until it ends, whatever the run says.
_LIVE = (TaskInstanceState.RUNNING, TaskInstanceState.QUEUED)

Purge = Callable[[Sequence[Any]], None]


@dataclass(frozen=True)
class CleanScope:
    """What a clean may delete: history older than ``older_than`` (of ``dag_ids`` only, if any)."""

    older_than: dt.datetime
    dag_ids: tuple[str, ...] = ()


class ObjectPurgers(Protocol):
    """Who deletes the objects rows refer to before the rows go (None: the SQL backends);
    ``state.engine.Purgers`` is one."""

    @property
    def xcoms(self) -> Purge | None: ...

    @property
    def states(self) -> Purge | None: ...


@dataclass(frozen=True)
class NoPurgers:
    xcoms: Purge | None = None
    states: Purge | None = None


@dataclass(frozen=True)
class RunRows:
    """A table whose rows belong to a run, by its ``dag_id`` and ``run_id`` columns.

    ``objects``: which purger gets the rows (those matching ``refers``) before they go.
    """

    model: Any
    objects: str | None = None
    refers: Callable[[], ColumnElement[bool]] | None = None

    @property
    def name(self) -> str:
        return str(self.model.__tablename__)

    def of_runs(self, runs: Sequence[tuple[int, str, str]]) -> ColumnElement[bool]:
        keys = [(dag_id, run_id) for _, dag_id, run_id in runs]
        return tuple_(self.model.dag_id, self.model.run_id).in_(keys)

    def joined(self) -> ColumnElement[bool]:
        return and_(self.model.dag_id == DagRun.dag_id, self.model.run_id == DagRun.run_id)

    def key(self) -> InstrumentedAttribute[Any]:
        return self.model.id  # type: ignore[no-any-return]


@dataclass(frozen=True)
class RunKeyRows(RunRows):
    """A table whose rows belong to a run by the run's primary key (``column``)."""

    column: str = "dag_run_id"

    def of_runs(self, runs: Sequence[tuple[int, str, str]]) -> ColumnElement[bool]:
        return self.key().in_([pk for pk, _, _ in runs])

    def joined(self) -> ColumnElement[bool]:
        return self.key() == DagRun.id

    def key(self) -> InstrumentedAttribute[Any]:
        return getattr(self.model, self.column)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class TaskInstanceRows(RunRows):
    """A table whose rows belong to a task instance (``ti_id``), hence to its run."""

    def _of(self, *run_key: ColumnElement[bool]) -> ColumnElement[bool]:
        return self.key().in_(select(TaskInstance.id).where(*run_key))

    def of_runs(self, runs: Sequence[tuple[int, str, str]]) -> ColumnElement[bool]:
        keys = [(dag_id, run_id) for _, dag_id, run_id in runs]
        return self._of(tuple_(TaskInstance.dag_id, TaskInstance.run_id).in_(keys))

    def joined(self) -> ColumnElement[bool]:
        return self._of(TaskInstance.dag_id == DagRun.dag_id, TaskInstance.run_id == DagRun.run_id)

    def key(self) -> InstrumentedAttribute[Any]:
        return self.model.ti_id  # type: ignore[no-any-return]


@dataclass(frozen=True)
class AgedRows:
    """A table whose rows carry their own time: those older than the scope's go.

    ``dag_column``: how ``--dag-id`` narrows it (a table without one is left alone then);
    ``kept``: rows that must stay whatever their age (still waited on by something).
    """

    model: Any
    time_column: str
    dag_column: str | None = None
    kept: Callable[[], ColumnElement[bool]] | None = None
    key_column: str = "id"

    @property
    def name(self) -> str:
        return str(self.model.__tablename__)

    def where(self, scope: CleanScope) -> list[ColumnElement[bool]] | None:
        """The rows of ``scope``; None when the scope names DAGs and the table has none."""
        conditions = [getattr(self.model, self.time_column) < scope.older_than]
        if scope.dag_ids:
            if self.dag_column is None:
                return None
            conditions.append(getattr(self.model, self.dag_column).in_(scope.dag_ids))
        if self.kept is not None:
            conditions.append(~self.kept())
        return conditions


def _queued_asset_events() -> ColumnElement[bool]:
    """An event a partitioned DAG has not mapped yet, or that a rollup still counts."""
    return exists().where(PartitionEventQueue.asset_event_id == AssetEvent.id) | exists().where(
        PartitionKeyLog.asset_event_id == AssetEvent.id
    )


#: The rows of a run, deleted before it (children first: a crash leaves the run to finish).
RUN_TABLES: tuple[RunRows, ...] = (
    RunRows(XCom, objects="xcoms"),
    RunRows(TaskStateValue, objects="states", refers=refers_to_object),
    RunRows(TaskInstanceHistory),
    TaskInstanceRows(HITLDetail),
    RunRows(TaskInstance),
    RunKeyRows(BackfillDagRun),
)
#: Tables that age on their own clock.
AGED_TABLES: tuple[AgedRows, ...] = (
    AgedRows(AssetEvent, "timestamp", "source_dag_id", kept=_queued_asset_events),
    AgedRows(EventLog, "dttm", "dag_id"),
)


def ended_runs(scope: CleanScope) -> list[ColumnElement[bool]]:
    """The runs a clean deletes: ended before ``older_than``, no try of theirs still live."""
    ti = aliased(TaskInstance)  # a count joins the task instances too: this one is its own
    live = (
        exists()
        .where(ti.dag_id == DagRun.dag_id, ti.run_id == DagRun.run_id, ti.state.in_(_LIVE))
        .correlate(DagRun)
    )
    conditions = [DagRun.state.in_(ENDED), DagRun.end_date < scope.older_than, ~live]
    if scope.dag_ids:
        conditions.append(DagRun.dag_id.in_(scope.dag_ids))
    return conditions


@dataclass
class HistoryBatch:
    """What one batch deleted: rows per table, and the runs whose logs may go now."""

    deleted: dict[str, int] = field(default_factory=dict)
    runs: list[tuple[str, str]] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return sum(self.deleted.values())

    def add(self, name: str, count: int) -> None:
        if count:
            self.deleted[name] = self.deleted.get(name, 0) + count


def count_history(session: Session, scope: CleanScope) -> dict[str, int]:
    """How many rows of each table a clean of ``scope`` deletes (what ``--dry-run`` prints)."""
    runs = ended_runs(scope)
    counts = {"dag_run": session.scalar(select(func.count()).where(*runs)) or 0}
    for table in RUN_TABLES:
        query = select(func.count()).select_from(table.model).join(DagRun, table.joined())
        counts[table.name] = session.scalar(query.where(*runs)) or 0
    for aged in AGED_TABLES:
        if (where := aged.where(scope)) is not None:
            counts[aged.name] = session.scalar(select(func.count()).where(*where)) or 0
    return counts


def clean_runs_batch(
    session: Session,
    scope: CleanScope,
    max_rows: int = DEFAULT_MAX_ROWS,
    purgers: ObjectPurgers = NoPurgers(),
) -> HistoryBatch:
    """Delete up to ``max_rows`` rows of ended runs, and the runs once nothing of theirs is left.

    An empty batch means no run of ``scope`` is left (but for runs another transaction holds,
    found again by a later clean). If a purger raises, the transaction rolls back with it.
    """
    batch = HistoryBatch()
    query = select(DagRun.id, DagRun.dag_id, DagRun.run_id).where(*ended_runs(scope))
    locked = query.limit(RUNS_PER_BATCH).with_for_update(skip_locked=True, of=DagRun)
    runs = [(pk, dag_id, run_id) for pk, dag_id, run_id in session.execute(locked)]
    if not runs:
        return batch
    for table in RUN_TABLES:
        budget = max_rows - batch.rows
        if budget <= 0:
            return batch  # children left: the runs wait for the next batch
        batch.add(table.name, _delete_rows(session, table, runs, budget, purgers))
    if batch.rows >= max_rows:
        return batch
    session.execute(delete(DagRun).where(DagRun.id.in_([pk for pk, _, _ in runs])))
    batch.add("dag_run", len(runs))
    batch.runs = [(dag_id, run_id) for _, dag_id, run_id in runs]
    return batch


def _delete_rows(
    session: Session,
    table: RunRows,
    runs: Sequence[tuple[int, str, str]],
    budget: int,
    purgers: ObjectPurgers,
) -> int:
    """Delete up to ``budget`` rows of ``table`` belonging to ``runs``, by primary key."""
    key = table.key()
    purge = getattr(purgers, table.objects) if table.objects else None
    if purge is None:
        ids = list(session.scalars(select(key).where(table.of_runs(runs)).limit(budget)))
    else:
        rows = session.scalars(select(table.model).where(table.of_runs(runs)).limit(budget)).all()
        ids = [getattr(row, key.key) for row in rows]
        refers = table.refers
        keep = rows if refers is None else _referring(session, table, ids, refers)
        if keep:
            purge(keep)
    if ids:
        session.execute(delete(table.model).where(key.in_(ids)))
    return len(ids)


def _referring(
    session: Session, table: RunRows, ids: list[int], refers: Callable[[], ColumnElement[bool]]
) -> Sequence[Any]:
    return session.scalars(select(table.model).where(table.key().in_(ids), refers())).all()


def clean_aged_batch(
    session: Session, scope: CleanScope, max_rows: int = DEFAULT_MAX_ROWS
) -> HistoryBatch:
    """Delete up to ``max_rows`` rows of the ``AGED_TABLES`` older than the scope's time."""
    batch = HistoryBatch()
    for aged in AGED_TABLES:
        budget = max_rows - batch.rows
        where = aged.where(scope)
        if budget <= 0 or where is None:
            continue
        key = getattr(aged.model, aged.key_column)
        ids = list(session.scalars(select(key).where(*where).limit(budget)))
        if ids:
            session.execute(delete(aged.model).where(key.in_(ids)))
        batch.add(aged.name, len(ids))
    return batch


def clean_next_batch(
    url: str,
    scope: CleanScope,
    max_rows: int = DEFAULT_MAX_ROWS,
    purgers: ObjectPurgers = NoPurgers(),
) -> HistoryBatch:
    """One batch in its own transaction: the runs' rows first, then the aged tables' rows.

    An empty batch: nothing of ``scope`` is left to delete.
    """
    with session_scope(url) as session:
        batch = clean_runs_batch(session, scope, max_rows, purgers)
    if batch.rows:
        return batch
    with session_scope(url) as session:
        return clean_aged_batch(session, scope, max_rows)
