"""Backfills: the runs of a scheduled DAG's intervals in a date range, created at once as queued.

``create_backfill`` is the one way a backfill is made (``tradewind dags backfill`` and
``POST /api/v2/backfills`` both call it): one ``backfill`` run per data interval whose start
lies in the range (an interval that already has a run, scheduled or backfilled, is left as it
is), and a ``backfill`` row that links them. The scheduler starts them as it does every queued
run, within the DAG's ``max_active_runs`` and the backfill's own, and not while the backfill is
paused (``holds_back``). Cancelling pauses it and fails the runs not started yet.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from state.core import (
    Backfill,
    BackfillDagRun,
    DagRun,
    DagRunState,
    DagStructure,
    NotFound,
    Page,
    page_of,
    structure_of,
    utcnow,
)
from state.engine.runs import create_run, get_dag_model
from state.records import mark_run_state
from tradewind.partitions import cron_partition
from tradewind.timetable_base import InvalidTimetable
from tradewind.timetable_store import intervals_between, rebuild_timetable
from tradewind.timetables import Interval, timetable_of

BACKFILL = "backfill"
#: More runs than this in one backfill is most likely a wrong range.
MAX_RUNS = 10_000
_UNFINISHED = (DagRunState.QUEUED, DagRunState.RUNNING)
_ORDER_BY = {
    "id": Backfill.id,
    "dag_id": Backfill.dag_id,
    "from_date": Backfill.from_date,
    "to_date": Backfill.to_date,
    "created_at": Backfill.created_at,
}


class InvalidBackfill(ValueError):
    """A backfill that cannot be made: its one line says why."""


class BackfillEnded(ValueError):
    """A change asked of a backfill that has completed or was cancelled."""


@dataclass(frozen=True)
class BackfillRequest:
    """What a backfill is asked for; ``max_active_runs`` None means the DAG's own."""

    dag_id: str
    from_date: dt.datetime
    to_date: dt.datetime
    conf: Mapping[str, Any] = field(default_factory=dict)
    max_active_runs: int | None = None


@dataclass(frozen=True)
class BackfillPlan:
    """The intervals a backfill would create runs for, and the run ids of those that have one."""

    intervals: list[Interval]
    existing: list[str]
    max_active_runs: int
    partitioned_by_cron: bool = False  # each run is the partition of its interval's end
    # A timetable object's runs: the logical date is the interval's start, as Airflow has it.
    logical_at_start: bool = False


@dataclass(frozen=True)
class Backfilled:
    backfill_id: int
    created: list[str]
    existing: list[str]


def backfill_run_id(interval: Interval) -> str:
    return f"{BACKFILL}__{interval[1].isoformat()}"


def intervals_in(
    schedule: str,
    anchor: dt.datetime,
    start: dt.datetime,
    end: dt.datetime,
    timezone: str = "UTC",
) -> list[Interval]:
    """The data intervals of ``schedule`` (a cron one read in ``timezone``) whose start is in
    ``[start, end]``."""
    table = timetable_of(schedule, anchor, timezone)
    if table is None:
        raise InvalidBackfill("a DAG scheduled @once has no intervals to backfill")
    found: list[Interval] = []
    point = table.first_at_or_after(start)
    while point <= end:
        if len(found) >= MAX_RUNS:
            raise InvalidBackfill(f"the range holds more than {MAX_RUNS} intervals")
        following = table.after(point)
        found.append((point, following))
        point = following
    return found


def plan_backfill(session: Session, request: BackfillRequest) -> BackfillPlan:
    """What ``create_backfill`` would do, written nowhere (the API's dry run shows it)."""
    start, end = request.from_date, request.to_date
    if end < start:
        raise InvalidBackfill(f"to date {end.isoformat()} is before from date {start.isoformat()}")
    structure = structure_of(get_dag_model(session, request.dag_id))
    query = select(DagRun.data_interval_end).where(DagRun.dag_id == request.dag_id)
    taken = set(session.scalars(query))
    intervals, existing = [], []
    for interval in _intervals(request.dag_id, structure, start, end):
        if interval[1] in taken:
            existing.append(backfill_run_id(interval))
        else:
            intervals.append(interval)
    return BackfillPlan(
        intervals,
        existing,
        request.max_active_runs or structure.max_active_runs,
        structure.partitioned_by_cron,
        structure.timetable is not None,
    )


def _intervals(
    dag_id: str, structure: DagStructure, start: dt.datetime, end: dt.datetime
) -> list[Interval]:
    """The intervals of the DAG's schedule (or timetable object) in ``[start, end]``."""
    if structure.timetable is not None:
        try:
            timetable = rebuild_timetable(structure.timetable)
            return [(i.start, i.end) for i in intervals_between(timetable, start, end, MAX_RUNS)]
        except InvalidTimetable as error:
            raise InvalidBackfill(f"DAG {dag_id}: {error}") from None
    if structure.schedule is None:
        raise InvalidBackfill(
            f"DAG {dag_id} has no time schedule: there are no intervals to backfill"
        )
    anchor = dt.datetime.fromisoformat(structure.start_date) if structure.start_date else start
    return intervals_in(structure.schedule, anchor, start, end, structure.timezone)


def create_backfill(
    session: Session, request: BackfillRequest, user: str | None = None
) -> Backfilled:
    """Create the backfill of ``request``: its row and one queued run per new interval
    (``user``: who asked for it, named on its runs)."""
    plan = plan_backfill(session, request)
    now = utcnow()
    backfill = Backfill(
        dag_id=request.dag_id,
        from_date=request.from_date,
        to_date=request.to_date,
        dag_run_conf=dict(request.conf),
        is_paused=False,
        max_active_runs=plan.max_active_runs,
        created_at=now,
        updated_at=now,
    )
    session.add(backfill)
    session.flush()
    created = []
    for interval in plan.intervals:
        run_id = backfill_run_id(interval)
        partition = cron_partition(interval[1]) if plan.partitioned_by_cron else None
        logical_date = interval[0] if plan.logical_at_start else None
        run = create_run(
            session,
            request.dag_id,
            run_id,
            request.conf,
            BACKFILL,
            interval,
            partition,
            logical_date,
            user=user,
        )
        session.add(BackfillDagRun(dag_run_id=run.id, backfill_id=backfill.id))
        created.append(run_id)
    session.flush()
    return Backfilled(backfill.id, created, plan.existing)


@dataclass(frozen=True)
class BackfillView:
    """A backfill as the API shows it: ``completed_at`` derived from its runs unless cancelled."""

    backfill: Backfill
    completed_at: dt.datetime | None


def _views(session: Session, backfills: Sequence[Backfill]) -> list[BackfillView]:
    """The backfills with their completion, from one aggregate over their runs."""
    unfinished = func.sum(case((DagRun.state.in_(_UNFINISHED), 1), else_=0))
    rows = session.execute(
        select(BackfillDagRun.backfill_id, unfinished, func.max(DagRun.end_date))
        .join(DagRun, DagRun.id == BackfillDagRun.dag_run_id)
        .where(BackfillDagRun.backfill_id.in_([b.id for b in backfills]))
        .group_by(BackfillDagRun.backfill_id)
    )
    runs = {backfill_id: (left, last) for backfill_id, left, last in rows}
    return [BackfillView(b, _completed_at(b, *runs.get(b.id, (0, None)))) for b in backfills]


def _completed_at(
    backfill: Backfill, unfinished: int, last_end: dt.datetime | None
) -> dt.datetime | None:
    """When the backfill ended: cancelled, or its last run's end once none is left to run (a
    backfill that created no run ended as it was made)."""
    if backfill.cancelled_at is not None:
        return backfill.cancelled_at
    if unfinished:
        return None
    return last_end or backfill.created_at


def list_backfills(
    session: Session, page: Page, dag_id: str | None = None
) -> tuple[list[BackfillView], int]:
    query = select(Backfill)
    if dag_id is not None:
        query = query.where(Backfill.dag_id == dag_id)
    rows, total = page_of(session, query, page, _ORDER_BY, ["id"])
    return _views(session, [row[0] for row in rows]), total


def get_backfill(session: Session, backfill_id: int) -> BackfillView:
    backfill = session.get(Backfill, backfill_id)
    if backfill is None:
        raise NotFound(f"no backfill with id {backfill_id}")
    return _views(session, [backfill])[0]


def _unfinished(session: Session, backfill_id: int) -> BackfillView:
    view = get_backfill(session, backfill_id)
    if view.completed_at is not None:
        raise BackfillEnded(f"backfill {backfill_id} has already completed")
    return view


def set_paused(session: Session, backfill_id: int, paused: bool) -> BackfillView:
    """Pause (or resume) a backfill: the scheduler starts none of its queued runs while paused."""
    backfill = _unfinished(session, backfill_id).backfill
    backfill.is_paused, backfill.updated_at = paused, utcnow()
    session.flush()
    return get_backfill(session, backfill_id)


def cancel_backfill(session: Session, backfill_id: int) -> BackfillView:
    """Pause a backfill for good and fail its runs not started yet; running ones go on."""
    backfill = _unfinished(session, backfill_id).backfill
    now = utcnow()
    backfill.is_paused, backfill.cancelled_at, backfill.updated_at = True, now, now
    # The paused flag is written before the runs are read: a scheduler that locks one of them
    # after this commit sees the backfill paused and leaves it queued.
    session.flush()
    queued = session.scalars(
        select(DagRun)
        .join(BackfillDagRun, BackfillDagRun.dag_run_id == DagRun.id)
        .where(BackfillDagRun.backfill_id == backfill_id, DagRun.state == DagRunState.QUEUED)
    )
    for run in list(queued):
        mark_run_state(session, run, DagRunState.FAILED)
    return get_backfill(session, backfill_id)


def holds_back(session: Session, run: DagRun) -> bool:
    """Whether a queued backfill run must wait: its backfill is paused, or it already has
    ``max_active_runs`` runs running. One statement, for backfill runs only."""
    mine = select(BackfillDagRun.backfill_id).where(BackfillDagRun.dag_run_id == run.id)
    running = (
        select(func.count())
        .select_from(BackfillDagRun)
        .join(DagRun, DagRun.id == BackfillDagRun.dag_run_id)
        .where(BackfillDagRun.backfill_id == Backfill.id, DagRun.state == DagRunState.RUNNING)
        .scalar_subquery()
    )
    row = session.execute(
        select(Backfill.is_paused, Backfill.max_active_runs, running).where(
            Backfill.id == mine.scalar_subquery()
        )
    ).first()
    if row is None:  # a backfill run made before backfills had rows
        return False
    paused, max_active_runs, active = row
    return bool(paused) or active >= max_active_runs
