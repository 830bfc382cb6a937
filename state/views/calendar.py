"""A DAG's runs by UTC day, for its calendar: one ``GROUP BY`` over a bounded span of days."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from state.core import DagRun, statements_of


def runs_by_day(session: Session, dag_id: str, since: dt.datetime) -> dict[str, dict[str, int]]:
    """Each UTC day (``YYYY-MM-DD``) from ``since`` with the DAG's runs counted by state.

    A run's day is its logical date's, else the day it was made (a run without one)."""
    moment = func.coalesce(DagRun.logical_date, DagRun.created_at)
    day = statements_of(session).utc_day(moment).label("day")
    query = (
        select(day, DagRun.state, func.count())
        .where(DagRun.dag_id == dag_id, moment >= since)
        .group_by(day, DagRun.state)
    )
    days: dict[str, dict[str, int]] = {}
    for when, state, count in session.execute(query):
        days.setdefault(str(when), {})[str(state)] = count
    return days
