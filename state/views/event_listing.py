"""The event log as the API and the pages list it: filtered, ordered and paged as Airflow's
``GET /eventLogs`` (one query for the page, one for the total)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from state.core import EventLog, NotFound, Page, page_of
from state.views.listing import contains, present, starts_with


@dataclass(frozen=True)
class EventLogFilter:
    """Airflow's filters of the event log; a pattern matches anywhere, a prefix at the start."""

    dag_id: str | None = None
    task_id: str | None = None
    run_id: str | None = None
    map_index: int | None = None
    try_number: int | None = None
    owner: str | None = None
    event: str | None = None
    excluded_events: Sequence[str] = ()
    included_events: Sequence[str] = ()
    before: dt.datetime | None = None
    after: dt.datetime | None = None
    dag_id_pattern: str | None = None
    task_id_pattern: str | None = None
    run_id_pattern: str | None = None
    owner_pattern: str | None = None
    event_pattern: str | None = None
    dag_id_prefix: str | None = None
    task_id_prefix: str | None = None
    run_id_prefix: str | None = None
    owner_prefix: str | None = None
    event_prefix: str | None = None


_EVENT_ORDER = {
    "id": EventLog.id,
    "event_log_id": EventLog.id,
    "dttm": EventLog.dttm,
    "when": EventLog.dttm,
    "dag_id": EventLog.dag_id,
    "task_id": EventLog.task_id,
    "run_id": EventLog.run_id,
    "event": EventLog.event,
    "logical_date": EventLog.logical_date,
    "owner": EventLog.owner,
    "extra": EventLog.extra,
}


def _equal(column: ColumnElement[object] | object, value: object) -> ColumnElement[bool] | None:
    return None if value is None else column == value  # type: ignore[return-value]


def _conditions(where: EventLogFilter) -> list[ColumnElement[bool]]:
    return present(
        _equal(EventLog.dag_id, where.dag_id),
        _equal(EventLog.task_id, where.task_id),
        _equal(EventLog.run_id, where.run_id),
        _equal(EventLog.map_index, where.map_index),
        _equal(EventLog.try_number, where.try_number),
        _equal(EventLog.owner, where.owner),
        _equal(EventLog.event, where.event),
        EventLog.event.not_in(list(where.excluded_events)) if where.excluded_events else None,
        EventLog.event.in_(list(where.included_events)) if where.included_events else None,
        EventLog.dttm < where.before if where.before else None,
        EventLog.dttm > where.after if where.after else None,
        contains(EventLog.dag_id, where.dag_id_pattern),
        contains(EventLog.task_id, where.task_id_pattern),
        contains(EventLog.run_id, where.run_id_pattern),
        contains(EventLog.owner, where.owner_pattern),
        contains(EventLog.event, where.event_pattern),
        starts_with(EventLog.dag_id, where.dag_id_prefix),
        starts_with(EventLog.task_id, where.task_id_prefix),
        starts_with(EventLog.run_id, where.run_id_prefix),
        starts_with(EventLog.owner, where.owner_prefix),
        starts_with(EventLog.event, where.event_prefix),
    )


def list_event_logs(
    session: Session, page: Page, where: EventLogFilter = EventLogFilter()
) -> tuple[list[EventLog], int]:
    """A page of the event log, newest first unless ``page`` orders otherwise."""
    query = select(EventLog).where(*_conditions(where))
    rows, total = page_of(session, query, page, _EVENT_ORDER, ["-id"])
    return [row[0] for row in rows], total


def get_event_log(session: Session, event_log_id: int) -> EventLog:
    row = session.get(EventLog, event_log_id)
    if row is None:
        raise NotFound(f"no event log entry {event_log_id}")
    return row
