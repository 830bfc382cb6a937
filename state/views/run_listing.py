"""Reading runs, task instances, XComs and state values for the API server, a page at a time
(and for the CLI, which shows a run's task instances whole: ``run_task_instances``).

A task instance comes with its run's ``logical_date`` and ``created_at`` (Airflow's
``run_after``), read by one join: a page of task instances is one query whatever the run's size.
``"~"`` as a DAG or run id means every DAG or every run, as in Airflow's REST API.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import ColumnElement, Select, func, or_, select
from sqlalchemy.orm import Session

from state.core import (
    DagRun,
    DagRunState,
    NotFound,
    Page,
    TaskInstance,
    TaskInstanceState,
    TaskStateValue,
    XCom,
    ordering,
    page_of,
    statements_of,
    utcnow,
)
from state.records import TIKey
from state.views.listing import contains

ANY = "~"


def get_run(session: Session, dag_id: str, run_id: str) -> DagRun:
    query = select(DagRun).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id)
    run = session.scalars(query).first()
    if run is None:
        raise NotFound(f"DAG {dag_id!r} has no run {run_id!r}")
    return run


@dataclass(frozen=True)
class Span:
    """A range of a column (either end open): dates, or a duration in seconds."""

    gte: dt.datetime | float | None = None
    lte: dt.datetime | float | None = None

    def of(self, column: Any) -> list[ColumnElement[bool] | None]:
        return [
            column >= self.gte if self.gte is not None else None,
            column <= self.lte if self.lte is not None else None,
        ]


NO_SPAN = Span()


@dataclass(frozen=True)
class RunFilter:
    states: Sequence[str] = ()
    run_types: Sequence[str] = ()
    run_id_pattern: str | None = None
    logical_date_gte: dt.datetime | None = None
    logical_date_lte: dt.datetime | None = None
    dag_id_pattern: str | None = None
    start_date: Span = NO_SPAN
    end_date: Span = NO_SPAN
    run_after: Span = NO_SPAN
    duration: Span = NO_SPAN  # seconds


_RUN_ORDER = {
    "id": DagRun.id,
    "run_id": DagRun.run_id,
    "dag_run_id": DagRun.run_id,
    "dag_id": DagRun.dag_id,
    "state": DagRun.state,
    "logical_date": DagRun.logical_date,
    "run_after": DagRun.created_at,
    "start_date": DagRun.start_date,
    "end_date": DagRun.end_date,
    "run_type": DagRun.run_type,
}


def list_runs(
    session: Session,
    dag_id: str,
    page: Page,
    where: RunFilter = RunFilter(),
    count_limit: int | None = None,
) -> tuple[list[DagRun], int]:
    """A page of runs and how many match (up to ``count_limit`` + 1 when given: a browse of
    100,000 runs says "1,000+" rather than count them each time)."""
    seconds = statements_of(session).seconds_between(DagRun.start_date, DagRun.end_date)
    conditions: list[ColumnElement[bool] | None] = [
        DagRun.dag_id == dag_id if dag_id != ANY else None,
        DagRun.state.in_(list(where.states)) if where.states else None,
        DagRun.run_type.in_(list(where.run_types)) if where.run_types else None,
        contains(DagRun.run_id, where.run_id_pattern),
        contains(DagRun.dag_id, where.dag_id_pattern),
        DagRun.logical_date >= where.logical_date_gte if where.logical_date_gte else None,
        DagRun.logical_date <= where.logical_date_lte if where.logical_date_lte else None,
        *where.start_date.of(DagRun.start_date),
        *where.end_date.of(DagRun.end_date),
        *where.run_after.of(DagRun.created_at),
        *where.duration.of(seconds),
    ]
    query = select(DagRun).where(*[c for c in conditions if c is not None])
    fields = page.order_by or ("id",)
    if not {"id", "-id"} & set(fields):
        fields = (*fields, "-id")  # pages never overlap on ties
    page = replace(page, order_by=fields)
    terms = ordering(page.order_by, {**_RUN_ORDER, "duration": seconds})
    rows = session.scalars(
        query.order_by(*terms).limit(page.bounded_limit).offset(max(page.offset, 0))
    )
    ids = select(DagRun.id).where(*[c for c in conditions if c is not None])
    return list(rows), _count(session, ids, count_limit)


@dataclass(frozen=True)
class TIRow:
    """A task instance with what its run says of it."""

    ti: TaskInstance
    logical_date: dt.datetime | None
    run_after: dt.datetime


@dataclass(frozen=True)
class TIFilter:
    task_id: str | None = None
    task_ids: Sequence[str] = ()
    mapped_only: bool = False
    map_index: int | None = None
    states: Sequence[str] = ()
    pools: Sequence[str] = ()
    queues: Sequence[str] = ()
    try_numbers: Sequence[int] = ()
    map_indexes: Sequence[int] = field(default_factory=tuple)
    dag_id_pattern: str | None = None
    task_id_pattern: str | None = None
    start_date: Span = NO_SPAN
    end_date: Span = NO_SPAN
    duration: Span = NO_SPAN  # seconds


_TI_ORDER = {
    "id": TaskInstance.id,
    "task_id": TaskInstance.task_id,
    "map_index": TaskInstance.map_index,
    "state": TaskInstance.state,
    "try_number": TaskInstance.try_number,
    "start_date": TaskInstance.start_date,
    "end_date": TaskInstance.end_date,
    "pool": TaskInstance.pool,
    "queue": TaskInstance.queue,
    "dag_id": TaskInstance.dag_id,
    "run_id": TaskInstance.run_id,
    "dag_run_id": TaskInstance.run_id,
    "logical_date": DagRun.logical_date,
    "run_after": DagRun.created_at,
}


_TI_DEFAULT_ORDER = ("map_index", "task_id")
_RUN_FIELDS = {"logical_date", "run_after"}  # the orderings that read the run
_RUN_OF_TI = (DagRun.dag_id == TaskInstance.dag_id) & (DagRun.run_id == TaskInstance.run_id)


def _ti_query() -> Select[TaskInstance, dt.datetime | None, dt.datetime]:
    return select(TaskInstance, DagRun.logical_date, DagRun.created_at).join(DagRun, _RUN_OF_TI)


def _state_in(states: Sequence[str]) -> ColumnElement[bool]:
    """Airflow names the ``none`` state ``null`` (or ``none``) in a filter."""
    named = [s for s in states if s not in ("none", "null", "")]
    if len(named) == len(states):
        return TaskInstance.state.in_(named)
    return or_(TaskInstance.state.in_(named), TaskInstance.state == TaskInstanceState.NONE)


def list_task_instances(
    session: Session,
    dag_id: str,
    run_id: str,
    page: Page,
    where: TIFilter = TIFilter(),
    count_limit: int | None = None,
) -> tuple[list[TIRow], int]:
    """A page of task instances and how many match (two statements).

    The page's ids are chosen first, ordered with ``id`` last so that pages never overlap (in
    the default order they are read from ``ix_task_instance_listing``, not sorted out of every
    task instance of the DAG); only those rows are then joined to their runs' dates. The count
    reads the task instances alone: every one has its run (a run is deleted with them,
    ``state.records.marking``). With ``count_limit`` it stops counting past that many (a browse
    over a million task instances says "10,000+" rather than count them all).
    """
    seconds = statements_of(session).seconds_between(TaskInstance.start_date, TaskInstance.end_date)
    conditions = _ti_conditions(dag_id, run_id, where, seconds)
    fields = page.order_by or _TI_DEFAULT_ORDER
    terms = [*ordering(fields, {**_TI_ORDER, "duration": seconds}), TaskInstance.id.asc()]
    ids = select(TaskInstance.id).where(*conditions)
    if any(field.removeprefix("-") in _RUN_FIELDS for field in fields):
        ids = ids.join(DagRun, _RUN_OF_TI)
    page_ids = ids.order_by(*terms).limit(page.bounded_limit).offset(max(page.offset, 0)).subquery()
    query = _ti_query().join(page_ids, TaskInstance.id == page_ids.c.id).order_by(*terms)
    rows = [
        TIRow(ti, logical_date, run_after) for ti, logical_date, run_after in session.execute(query)
    ]
    return rows, _count(session, select(TaskInstance.id).where(*conditions), count_limit)


def _count(session: Session, ids: Select[int], limit: int | None) -> int:
    """How many rows ``ids`` has, up to ``limit`` + 1 when there is a limit."""
    if limit is not None:
        ids = ids.limit(limit + 1)
    total = session.scalar(select(func.count()).select_from(ids.subquery()))
    return int(total or 0)


def _ti_conditions(
    dag_id: str, run_id: str, where: TIFilter, seconds: ColumnElement[float]
) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool] | None] = [
        TaskInstance.dag_id == dag_id if dag_id != ANY else None,
        TaskInstance.run_id == run_id if run_id != ANY else None,
        TaskInstance.task_id == where.task_id if where.task_id is not None else None,
        TaskInstance.task_id.in_(list(where.task_ids)) if where.task_ids else None,
        TaskInstance.map_index >= 0 if where.mapped_only else None,
        TaskInstance.map_index == where.map_index if where.map_index is not None else None,
        _state_in(where.states) if where.states else None,
        TaskInstance.pool.in_(list(where.pools)) if where.pools else None,
        TaskInstance.queue.in_(list(where.queues)) if where.queues else None,
        TaskInstance.try_number.in_(list(where.try_numbers)) if where.try_numbers else None,
        TaskInstance.map_index.in_(list(where.map_indexes)) if where.map_indexes else None,
        contains(TaskInstance.dag_id, where.dag_id_pattern),
        contains(TaskInstance.task_id, where.task_id_pattern),
        *where.start_date.of(TaskInstance.start_date),
        *where.end_date.of(TaskInstance.end_date),
        *where.duration.of(seconds),
    ]
    return [c for c in conditions if c is not None]


def run_task_instances(session: Session, run: DagRun) -> list[TaskInstance]:
    """Every task instance of ``run``, unpaged and unordered: the CLI shows a run whole."""
    query = select(TaskInstance).where(
        TaskInstance.dag_id == run.dag_id, TaskInstance.run_id == run.run_id
    )
    return list(session.scalars(query))


def task_instance_by_id(session: Session, ti_id: int) -> TaskInstance | None:
    """The task instance whose primary key is ``ti_id`` (a try's message names it so)."""
    return session.get(TaskInstance, ti_id)


def get_task_instance(session: Session, key: TIKey) -> TIRow:
    query = _ti_query().where(
        TaskInstance.dag_id == key.dag_id,
        TaskInstance.run_id == key.run_id,
        TaskInstance.task_id == key.task_id,
        TaskInstance.map_index == key.map_index,
    )
    row = session.execute(query).first()
    if row is None:
        index = f" map index {key.map_index}" if key.map_index >= 0 else ""
        raise NotFound(
            f"run {key.run_id!r} of DAG {key.dag_id!r} has no task {key.task_id!r}{index}"
        )
    return TIRow(row[0], row[1], row[2])


def upstream_states(
    session: Session, dag_id: str, run_id: str, task_ids: Sequence[str]
) -> list[TaskInstanceState]:
    """The states of the task instances of ``task_ids`` in one run (every map index)."""
    if not task_ids:
        return []
    query = select(TaskInstance.state).where(
        TaskInstance.dag_id == dag_id,
        TaskInstance.run_id == run_id,
        TaskInstance.task_id.in_(list(task_ids)),
    )
    return [TaskInstanceState(state) for state in session.scalars(query)]


_XCOM_ORDER = {
    "id": XCom.id,
    "dag_id": XCom.dag_id,
    "task_id": XCom.task_id,
    "run_id": XCom.run_id,
    "map_index": XCom.map_index,
    "key": XCom.key,
    "timestamp": XCom.created_at,
}


@dataclass(frozen=True)
class XComRow:
    xcom: XCom
    logical_date: dt.datetime | None
    run_after: dt.datetime


def _xcom_query() -> Select[XCom, dt.datetime | None, dt.datetime]:
    return select(XCom, DagRun.logical_date, DagRun.created_at).join(
        DagRun, (DagRun.dag_id == XCom.dag_id) & (DagRun.run_id == XCom.run_id)
    )


def list_xcoms(
    session: Session,
    key: TIKey,
    page: Page,
    xcom_key: str | None = None,
    all_map_indexes: bool = True,
    count_limit: int | None = None,
) -> tuple[list[XComRow], int]:
    """A page of XComs with their runs' dates, and how many match: exactly, or (with
    ``count_limit``, the browse) counted over the XComs alone up to that many + 1."""
    conditions: list[ColumnElement[bool] | None] = [
        XCom.dag_id == key.dag_id if key.dag_id != ANY else None,
        XCom.run_id == key.run_id if key.run_id != ANY else None,
        XCom.task_id == key.task_id if key.task_id != ANY else None,
        None if all_map_indexes else XCom.map_index == key.map_index,
        XCom.key == xcom_key if xcom_key is not None else None,
    ]
    present_conditions = [c for c in conditions if c is not None]
    query = _xcom_query().where(*present_conditions)
    default = ["dag_id", "task_id", "run_id", "map_index", "key"]
    if count_limit is None:
        rows, total = page_of(session, query, page, _XCOM_ORDER, default)
        return [XComRow(row[0], row[1], row[2]) for row in rows], total
    terms = ordering(page.order_by or default, _XCOM_ORDER)
    page_rows = session.execute(
        query.order_by(*terms).limit(page.bounded_limit).offset(max(page.offset, 0))
    )
    ids = select(XCom.id).where(*present_conditions)
    return [XComRow(*row) for row in page_rows], _count(session, ids, count_limit)


def get_xcom(session: Session, key: TIKey, xcom_key: str) -> XComRow:
    rows, _ = list_xcoms(session, key, Page(limit=1), xcom_key, all_map_indexes=False)
    if not rows:
        raise NotFound(f"{key.dag_id}/{key.run_id}/{key.task_id} has no XCom {xcom_key!r}")
    return rows[0]


def _live_state(key: TIKey, now: dt.datetime) -> list[ColumnElement[bool]]:
    return [
        TaskStateValue.dag_id == key.dag_id,
        TaskStateValue.run_id == key.run_id,
        TaskStateValue.task_id == key.task_id,
        TaskStateValue.map_index == key.map_index,
        or_(TaskStateValue.expires_at.is_(None), TaskStateValue.expires_at > now),
    ]


_STATE_ORDER = {"key": TaskStateValue.key, "updated_at": TaskStateValue.updated_at}


def list_state_values(session: Session, key: TIKey, page: Page) -> tuple[list[TaskStateValue], int]:
    query = select(TaskStateValue).where(*_live_state(key, utcnow()))
    rows, total = page_of(session, query, page, _STATE_ORDER, ["key"])
    return [row[0] for row in rows], total


def get_state_value(session: Session, key: TIKey, state_key: str) -> TaskStateValue:
    query = select(TaskStateValue).where(
        *_live_state(key, utcnow()), TaskStateValue.key == state_key
    )
    row = session.scalars(query).first()
    if row is None:
        raise NotFound(f"{key.dag_id}/{key.run_id}/{key.task_id} has no state key {state_key!r}")
    return row


def count_runs_by_state(session: Session, dag_id: str) -> dict[DagRunState, int]:
    query = select(DagRun.state, func.count()).where(DagRun.dag_id == dag_id).group_by(DagRun.state)
    return {DagRunState(state): count for state, count in session.execute(query)}


def task_ids_in_states(
    session: Session, run: DagRun, states: Sequence[TaskInstanceState]
) -> list[str]:
    """The tasks of ``run`` with a task instance in one of ``states`` (each task once)."""
    query = (
        select(TaskInstance.task_id)
        .where(
            TaskInstance.dag_id == run.dag_id,
            TaskInstance.run_id == run.run_id,
            TaskInstance.state.in_(list(states)),
        )
        .distinct()
    )
    return list(session.scalars(query))
