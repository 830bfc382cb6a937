"""Creating the runs of a DAG scheduled by a timetable object, as the timetable asks for them.

The timetable is rebuilt from the DAG's stored structure (``tradewind/timetable_store.py``).
Its answer for the next run (when it is due, over which data interval) is kept on the DAG's row
(``next_dagrun_after`` and the interval) when it is asked, and the run is created from that
answer once due, as Airflow does: asked again at that moment, a timetable may answer otherwise
(an event just past is skipped without catchup; a DAG folder's timetable may read today's date).
The run after it is asked with the created run's interval as the last one. A run's id is
``scheduled__<run_after>``, its logical date its interval's start; a second scheduler creating
the same run collides on the id and moves on.
"""

from __future__ import annotations

import datetime as dt
import logging

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from state.core import DagModel, DagRun
from state.engine import RunExists, create_run
from tradewind.timetable_base import DagRunInfo, DataInterval, TimeRestriction, Timetable
from tradewind.timetable_store import next_run

log = logging.getLogger("tradewind.scheduler")

SCHEDULED = "scheduled"
#: ``next_dagrun_after`` of a DAG whose timetable asks for no further run.
NEVER = dt.datetime(9999, 12, 31, tzinfo=dt.UTC)


def create_timetable_runs(
    session: Session,
    dag_id: str,
    timetable: Timetable,
    restriction: TimeRestriction,
    room: int,
    now: dt.datetime,
) -> list[str]:
    """Create the DAG's runs that are due, at most ``room`` (what ``max_active_runs`` leaves)."""
    pending = _kept(session, dag_id)
    if pending is None:  # never asked, or the schedule changed at sync
        pending = _ask(session, dag_id, timetable, _last_interval(session, dag_id), restriction)
    created: list[str] = []
    while pending is not None and pending.run_after <= now and len(created) < room:
        run_id = _create(session, dag_id, pending)
        if run_id is not None:
            created.append(run_id)
        pending = _ask(session, dag_id, timetable, pending.data_interval, restriction)
    return created


def _ask(
    session: Session,
    dag_id: str,
    timetable: Timetable,
    last: DataInterval | None,
    restriction: TimeRestriction,
) -> DagRunInfo | None:
    """The timetable's next run after ``last``, kept on the DAG's row."""
    info = next_run(timetable, last, restriction)
    interval = info.data_interval if info else None
    session.execute(
        update(DagModel)
        .where(DagModel.dag_id == dag_id)
        .values(
            next_dagrun_after=info.run_after if info else NEVER,
            next_dagrun_data_interval_start=interval.start if interval else None,
            next_dagrun_data_interval_end=interval.end if interval else None,
        )
    )
    return info


def _kept(session: Session, dag_id: str) -> DagRunInfo | None:
    """The next run as last asked for; None when it must be asked (``NEVER`` stays NEVER)."""
    row = session.execute(
        select(
            DagModel.next_dagrun_after,
            DagModel.next_dagrun_data_interval_start,
            DagModel.next_dagrun_data_interval_end,
        ).where(DagModel.dag_id == dag_id)
    ).one()
    after, start, end = row
    if after is None:
        return None
    interval = DataInterval(start, end) if start is not None and end is not None else None
    return DagRunInfo(after, interval)


def _last_interval(session: Session, dag_id: str) -> DataInterval | None:
    row = session.execute(
        select(DagRun.data_interval_start, DagRun.data_interval_end)
        .where(DagRun.dag_id == dag_id, DagRun.run_type == SCHEDULED)
        .order_by(DagRun.data_interval_end.desc(), DagRun.id.desc())
        .limit(1)
    ).first()
    if row is None or row[0] is None or row[1] is None:
        return None
    return DataInterval(row[0], row[1])


def _create(session: Session, dag_id: str, info: DagRunInfo) -> str | None:
    run_id = f"{SCHEDULED}__{info.run_after.isoformat()}"
    interval = info.data_interval
    try:
        create_run(
            session,
            dag_id,
            run_id=run_id,
            run_type=SCHEDULED,
            data_interval=(interval.start, interval.end) if interval else None,
            logical_date=info.logical_date or info.run_after,
        )
    except RunExists:
        return None  # another scheduler created it first
    session.flush()
    log.info("created run %s of %s (timetable) for %s", run_id, dag_id, interval)
    return run_id
