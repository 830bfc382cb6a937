"""``/api/v2/assets``: assets, their aliases and events; an event created by hand (``user``).

An event created here queues its asset for the DAGs scheduled on it, as a try's update does:
the scheduler creates their runs once their conditions hold.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status

from api.audit import ActingRunner
from api.deps import CanRead, DbSession
from api.models.assets import (
    AssetAliasCollectionResponse,
    AssetAliasResponse,
    AssetCollectionResponse,
    AssetEventCollectionResponse,
    AssetEventResponse,
    AssetResponse,
    CreateAssetEventsBody,
    QueuedEventCollectionResponse,
    alias_response,
    asset_response,
    event_response,
    queued_response,
)
from api.paging import IdPath, IdQuery, OptionalMapIndex, Paging
from state.core import utcnow
from state.engine import get_dag_model
from state.records import record_event
from state.views import (
    AssetFilter,
    EventFilter,
    HandMadeEvent,
    create_event_by_hand,
    get_alias,
    get_asset_view,
    list_aliases_page,
    list_assets_page,
    list_events_page,
    queued_for_dag,
)

router = APIRouter(tags=["Asset"])
Text = str | None


@router.get("/assets")
def get_assets(
    _: CanRead,
    session: DbSession,
    page: Paging,
    name_pattern: Text = None,
    name_prefix_pattern: Text = None,
    uri_pattern: Text = None,
    uri_prefix_pattern: Text = None,
    dag_ids: Annotated[list[str] | None, Query()] = None,
    only_active: bool = True,  # every stored asset is active: Tradewind retires none
) -> AssetCollectionResponse:
    where = AssetFilter(
        name_pattern, name_prefix_pattern, uri_pattern, uri_prefix_pattern, dag_ids or ()
    )
    views, total = list_assets_page(session, page, where)
    return AssetCollectionResponse(assets=[asset_response(v) for v in views], total_entries=total)


@router.get("/assets/aliases")
def get_asset_aliases(
    _: CanRead,
    session: DbSession,
    page: Paging,
    name_pattern: Text = None,
    name_prefix_pattern: Text = None,
) -> AssetAliasCollectionResponse:
    aliases, total = list_aliases_page(session, page, name_pattern, name_prefix_pattern)
    return AssetAliasCollectionResponse(
        asset_aliases=[alias_response(a) for a in aliases], total_entries=total
    )


@router.get("/assets/aliases/{asset_alias_id}")
def get_asset_alias(asset_alias_id: IdPath, _: CanRead, session: DbSession) -> AssetAliasResponse:
    return alias_response(get_alias(session, asset_alias_id))


@router.get("/assets/events")
def get_asset_events(
    _: CanRead,
    session: DbSession,
    page: Paging,
    asset_id: IdQuery = None,
    source_dag_id: Text = None,
    source_task_id: Text = None,
    source_run_id: Text = None,
    source_map_index: OptionalMapIndex = None,
    name_pattern: Text = None,
    name_prefix_pattern: Text = None,
    timestamp_gte: dt.datetime | None = None,
    timestamp_gt: dt.datetime | None = None,
    timestamp_lte: dt.datetime | None = None,
    timestamp_lt: dt.datetime | None = None,
) -> AssetEventCollectionResponse:
    where = EventFilter(
        asset_id,
        source_dag_id,
        source_task_id,
        source_run_id,
        source_map_index,
        name_pattern,
        name_prefix_pattern,
        after=(timestamp_gte, timestamp_gt),
        before=(timestamp_lte, timestamp_lt),
    )
    rows, total = list_events_page(session, page, where)
    return AssetEventCollectionResponse(
        asset_events=[event_response(row) for row in rows], total_entries=total
    )


@router.post("/assets/events")
def create_asset_event(
    body: CreateAssetEventsBody, who: ActingRunner, session: DbSession
) -> AssetEventResponse:
    """Record an update of an asset by hand (``extra.from_rest_api`` marks it, as Airflow's)."""
    if body.access_control is not None:
        detail = "access_control is not supported by Tradewind (it has no teams): leave it null"
        raise HTTPException(status.HTTP_400_BAD_REQUEST, detail)
    extra = {**body.extra, "from_rest_api": True}
    made = HandMadeEvent(body.asset_id, extra, body.partition_key)
    event = event_response(create_event_by_hand(session, made, utcnow()))
    record_event(session, who, "create_asset_event", extra={"asset_id": body.asset_id})
    return event


@router.get("/assets/{asset_id}")
def get_asset(asset_id: IdPath, _: CanRead, session: DbSession) -> AssetResponse:
    return asset_response(get_asset_view(session, asset_id))


@router.get("/dags/{dag_id}/assets/queuedEvents")
def get_dag_asset_queued_events(
    dag_id: str, _: CanRead, session: DbSession, before: dt.datetime | None = None
) -> QueuedEventCollectionResponse:
    """The asset updates the DAG has not consumed yet (at most one per asset it names)."""
    get_dag_model(session, dag_id)
    queued = queued_for_dag(session, dag_id, before)
    return QueuedEventCollectionResponse(
        queued_events=[queued_response(q) for q in queued], total_entries=len(queued)
    )
