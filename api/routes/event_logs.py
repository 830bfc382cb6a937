"""``/api/v2/eventLogs``: the event log, filtered, ordered and paged as Airflow's."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from fastapi import APIRouter, Query

from api.deps import CanRead, DbSession
from api.models.event_logs import (
    EventLogCollectionResponse,
    EventLogResponse,
    event_log_response,
)
from api.paging import IdPath, Paging
from state.views import EventLogFilter, get_event_log, list_event_logs

router = APIRouter(prefix="/eventLogs", tags=["Event Log"])

Events = Annotated[list[str] | None, Query()]
OneInt = Annotated[int | None, Query(ge=-(2**31), le=2**31 - 1)]


def _utc(moment: dt.datetime | None) -> dt.datetime | None:
    """A time without a zone is UTC (as Airflow reads it)."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=dt.UTC)


@router.get("")
def get_event_logs(
    _: CanRead,
    session: DbSession,
    page: Paging,
    dag_id: str | None = None,
    task_id: str | None = None,
    run_id: str | None = None,
    map_index: OneInt = None,
    try_number: OneInt = None,
    owner: str | None = None,
    event: str | None = None,
    excluded_events: Events = None,
    included_events: Events = None,
    before: dt.datetime | None = None,
    after: dt.datetime | None = None,
    dag_id_pattern: str | None = None,
    task_id_pattern: str | None = None,
    run_id_pattern: str | None = None,
    owner_pattern: str | None = None,
    event_pattern: str | None = None,
    dag_id_prefix_pattern: str | None = None,
    task_id_prefix_pattern: str | None = None,
    run_id_prefix_pattern: str | None = None,
    owner_prefix_pattern: str | None = None,
    event_prefix_pattern: str | None = None,
) -> EventLogCollectionResponse:
    where = EventLogFilter(
        dag_id=dag_id,
        task_id=task_id,
        run_id=run_id,
        map_index=map_index,
        try_number=try_number,
        owner=owner,
        event=event,
        excluded_events=excluded_events or (),
        included_events=included_events or (),
        before=_utc(before),
        after=_utc(after),
        dag_id_pattern=dag_id_pattern,
        task_id_pattern=task_id_pattern,
        run_id_pattern=run_id_pattern,
        owner_pattern=owner_pattern,
        event_pattern=event_pattern,
        dag_id_prefix=dag_id_prefix_pattern,
        task_id_prefix=task_id_prefix_pattern,
        run_id_prefix=run_id_prefix_pattern,
        owner_prefix=owner_prefix_pattern,
        event_prefix=event_prefix_pattern,
    )
    rows, total = list_event_logs(session, page, where)
    return EventLogCollectionResponse(
        event_logs=[event_log_response(row) for row in rows], total_entries=total
    )


@router.get("/{event_log_id}")
def get_event_log_route(event_log_id: IdPath, _: CanRead, session: DbSession) -> EventLogResponse:
    return event_log_response(get_event_log(session, event_log_id))
