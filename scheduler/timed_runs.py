"""Creating the runs of scheduled DAGs when their data interval has ended.

``DagModel.next_dagrun_after`` caches when a DAG's next run is due, so a loop reads only the
DAGs with something to do (and those whose next run was never computed: new, or whose schedule
changed at sync). The truth is the DAG's scheduled runs: the next interval follows the last one
created. Two schedulers creating the same run collide on its run id (``scheduled__<end>``), a
unique key; the second one moves on.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session

from scheduler.timetable_runs import create_timetable_runs
from state.core import DagModel, DagRun, DagRunState, DagStructure, structures_of
from state.engine import RunExists, create_run
from tradewind.partitions import cron_partition
from tradewind.timetable_base import InvalidTimetable, TimeRestriction, Timetable
from tradewind.timetable_store import rebuild_timetable
from tradewind.timetables import Interval, ScheduleSpec, next_interval

log = logging.getLogger("tradewind.scheduler")

SCHEDULED = "scheduled"
#: ``next_dagrun_after`` of a DAG that will never run again on its own (``@once``, done).
NEVER = dt.datetime(9999, 12, 31, tzinfo=dt.UTC)


@dataclass(frozen=True)
class DueDag:
    dag_id: str
    spec: ScheduleSpec
    max_active_runs: int
    # A CronPartitionTimetable DAG: each run stores the partition of its logical date.
    partitioned: bool = False
    # A DAG scheduled by a timetable object (``spec.schedule`` is then unused).
    timetable: Timetable | None = None
    # The DAG's end_date: no scheduled run has a logical date after it.
    end_date: dt.datetime | None = None

    def past_end(self, interval: Interval) -> bool:
        return self.end_date is not None and interval[1] > self.end_date


def due_dags(session: Session, now: dt.datetime) -> list[DueDag]:
    """Active, unpaused, scheduled DAGs whose next run is due or was never computed."""
    rows = session.execute(
        select(DagModel.dag_id, DagModel.version_hash).where(
            DagModel.is_active.is_(True),
            DagModel.is_paused.is_(False),
            or_(DagModel.next_dagrun_after.is_(None), DagModel.next_dagrun_after <= now),
        )
    )
    versions = {dag_id: version for dag_id, version in rows}
    due: list[DueDag] = []
    for dag_id, structure in structures_of(session, versions).items():
        if structure.timetable is not None:
            due += _timetable_dag(dag_id, structure)
        elif structure.schedule is not None:
            spec = _schedule_of(structure.schedule, structure)
            partitioned = structure.partitioned_by_cron
            end = _end_date(structure)
            due.append(DueDag(dag_id, spec, structure.max_active_runs, partitioned, end_date=end))
    return due


def _end_date(structure: DagStructure) -> dt.datetime | None:
    return dt.datetime.fromisoformat(structure.end_date) if structure.end_date else None


def _timetable_dag(dag_id: str, structure: DagStructure) -> list[DueDag]:
    """The DAG with its timetable rebuilt; none when it cannot be (logged, each loop)."""
    try:
        timetable = rebuild_timetable(structure.timetable or {})
    except (InvalidTimetable, ImportError, OSError) as error:
        log.error("DAG %s: its timetable cannot be rebuilt: %s", dag_id, error)
        return []
    spec = _schedule_of("", structure)
    end = _end_date(structure)
    return [DueDag(dag_id, spec, structure.max_active_runs, timetable=timetable, end_date=end)]


def _schedule_of(schedule: str, structure: DagStructure) -> ScheduleSpec:
    start = structure.start_date
    start_date = dt.datetime.fromisoformat(start) if start else None
    return ScheduleSpec(schedule, start_date, structure.catchup, structure.timezone)


def create_due_runs(session: Session, due: DueDag, now: dt.datetime) -> list[str]:
    """Create the DAG's runs that are due (at most up to ``max_active_runs`` active)."""
    if due.timetable is not None:
        spec = due.spec
        restriction = TimeRestriction(spec.start_date, due.end_date, spec.catchup)
        room = due.max_active_runs - _active_runs(session, due.dag_id)
        return create_timetable_runs(session, due.dag_id, due.timetable, restriction, room, now)
    created: list[str] = []
    interval = next_interval(due.spec, _last_end(session, due.dag_id), now)
    while interval is not None and interval[1] <= now:
        if due.past_end(interval):
            interval = None  # past the DAG's end_date: it never runs on its own again
            break
        if _active_runs(session, due.dag_id) >= due.max_active_runs:
            return created  # next_dagrun_after stays due: looked at again next loop
        run_id = _create(session, due, interval)
        if run_id is not None:
            created.append(run_id)
        interval = next_interval(due.spec, interval[1], now)
    _set_next(session, due.dag_id, interval[1] if interval else NEVER)
    return created


def _create(session: Session, due: DueDag, interval: Interval) -> str | None:
    dag_id = due.dag_id
    run_id = f"{SCHEDULED}__{interval[1].isoformat()}"
    partition = cron_partition(interval[1]) if due.partitioned else None
    try:
        create_run(
            session,
            dag_id,
            run_id=run_id,
            run_type=SCHEDULED,
            data_interval=interval,
            partition=partition,
        )
    except RunExists:
        return None  # another scheduler created it first
    session.flush()
    log.info("created run %s of %s for %s .. %s", run_id, dag_id, *interval)
    return run_id


def _last_end(session: Session, dag_id: str) -> dt.datetime | None:
    return session.scalar(
        select(func.max(DagRun.data_interval_end)).where(
            DagRun.dag_id == dag_id, DagRun.run_type == SCHEDULED
        )
    )


def _active_runs(session: Session, dag_id: str) -> int:
    active = (DagRunState.QUEUED, DagRunState.RUNNING)
    query = select(func.count()).where(DagRun.dag_id == dag_id, DagRun.state.in_(active))
    return int(session.scalar(query) or 0)


def _set_next(session: Session, dag_id: str, due_at: dt.datetime) -> None:
    session.execute(
        update(DagModel).where(DagModel.dag_id == dag_id).values(next_dagrun_after=due_at)
    )
