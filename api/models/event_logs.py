"""The event log as Airflow's ``EventLogResponse`` names it."""

from __future__ import annotations

import datetime as dt
import json

from pydantic import BaseModel

from state.core import EventLog


class EventLogResponse(BaseModel):
    event_log_id: int
    when: dt.datetime
    dag_id: str | None
    task_id: str | None
    run_id: str | None
    map_index: int | None
    try_number: int | None
    event: str
    logical_date: dt.datetime | None
    owner: str | None
    extra: str | None
    dag_display_name: str | None = None
    task_display_name: str | None = None


class EventLogCollectionResponse(BaseModel):
    event_logs: list[EventLogResponse]
    total_entries: int


def event_log_response(row: EventLog) -> EventLogResponse:
    """One row; the way in and the client's address are in ``extra`` (Airflow has no field)."""
    return EventLogResponse(
        event_log_id=row.id,
        when=row.dttm,
        dag_id=row.dag_id,
        task_id=row.task_id,
        run_id=row.run_id,
        map_index=row.map_index,
        try_number=row.try_number,
        event=row.event,
        logical_date=row.logical_date,
        owner=row.owner,
        extra=with_origin(row),
        dag_display_name=row.dag_id,
        task_display_name=row.task_id,
    )


def with_origin(row: EventLog) -> str:
    """``extra`` with ``origin`` and ``client`` beside what the action recorded."""
    recorded = json.loads(row.extra) if row.extra else {}
    return json.dumps({**recorded, "origin": row.origin, "client": row.client})
