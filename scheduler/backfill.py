"""Backfills: the runs of a scheduled DAG's intervals in a date range, created at once as queued.

``tradewind dags backfill DAG_ID --from-date --to-date`` creates one ``backfill`` run per data
interval whose start lies in the range (an interval that already has a run, scheduled or
backfilled, is left as it is). They are created queued: the scheduler starts them in order, no
more at a time than the DAG's ``max_active_runs`` allows (``state.pools.may_start_run``), as it
does every queued run.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from state.models import DagModel, DagRun
from state.runs import UnknownDag, create_run
from state.structure import structure_of
from tradewind.partitions import cron_partition
from tradewind.timetables import Interval, timetable_of

BACKFILL = "backfill"
#: More runs than this in one backfill is most likely a wrong range.
MAX_RUNS = 10_000


class InvalidBackfill(ValueError):
    """A backfill that cannot be made: its one line says why."""


@dataclass(frozen=True)
class Backfilled:
    created: list[str]
    existing: list[str]


def intervals_in(
    schedule: str, anchor: dt.datetime, start: dt.datetime, end: dt.datetime
) -> list[Interval]:
    """The data intervals of ``schedule`` whose start is in ``[start, end]``."""
    table = timetable_of(schedule, anchor)
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


def create_backfill(
    session: Session, dag_id: str, start: dt.datetime, end: dt.datetime
) -> Backfilled:
    """Create the backfill runs of ``dag_id`` for ``[start, end]``."""
    if end < start:
        raise InvalidBackfill(
            f"--to-date {end.isoformat()} is before --from-date {start.isoformat()}"
        )
    model = session.get(DagModel, dag_id)
    if model is None or not model.is_active:
        raise UnknownDag(f"no DAG named {dag_id!r}: see `tradewind dags list`")
    structure = structure_of(model)
    if structure.schedule is None:
        raise InvalidBackfill(
            f"DAG {dag_id} has no time schedule: there are no intervals to backfill"
        )
    anchor = dt.datetime.fromisoformat(structure.start_date) if structure.start_date else start
    taken = set(session.scalars(select(DagRun.data_interval_end).where(DagRun.dag_id == dag_id)))
    created, existing = [], []
    for interval in intervals_in(structure.schedule, anchor, start, end):
        run_id = f"{BACKFILL}__{interval[1].isoformat()}"
        if interval[1] in taken:
            existing.append(run_id)
            continue
        partition = cron_partition(interval[1]) if structure.partitioned_by_cron else None
        create_run(
            session,
            dag_id,
            run_id=run_id,
            run_type=BACKFILL,
            data_interval=interval,
            partition=partition,
        )
        created.append(run_id)
    return Backfilled(created, existing)
