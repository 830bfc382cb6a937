"""Assets, aliases, asset events and queued updates, as Airflow's ``AssetResponse`` and kin.

Tradewind keeps no task-to-asset references and no watchers: ``producing_tasks``,
``consuming_tasks`` and ``watchers`` are empty lists, and an event's ``created_dagruns`` is
empty (the runs an update triggered are not linked to it). Times Tradewind does not keep
(a schedule reference's, an asset's ``updated_at``) are the asset's ``created_at``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from state.core import AssetAlias, AssetDagRunQueue
from state.views import AssetView, EventRow


class DagScheduleAssetReference(BaseModel):
    dag_id: str
    created_at: dt.datetime
    updated_at: dt.datetime


class LastAssetEventResponse(BaseModel):
    id: int | None = None
    timestamp: dt.datetime | None = None


class AssetAliasResponse(BaseModel):
    id: int
    name: str
    group: str


class AssetAliasCollectionResponse(BaseModel):
    asset_aliases: list[AssetAliasResponse]
    total_entries: int


class AssetResponse(BaseModel):
    id: int
    name: str
    uri: str
    group: str
    extra: dict[str, JsonValue] | None = None
    created_at: dt.datetime
    updated_at: dt.datetime
    scheduled_dags: list[DagScheduleAssetReference]
    producing_tasks: list[dict[str, Any]] = []
    consuming_tasks: list[dict[str, Any]] = []
    aliases: list[AssetAliasResponse]
    watchers: list[dict[str, Any]] = []
    last_asset_event: LastAssetEventResponse | None = None


class AssetCollectionResponse(BaseModel):
    assets: list[AssetResponse]
    total_entries: int


class AssetEventResponse(BaseModel):
    id: int
    asset_id: int
    uri: str | None = None
    name: str | None = None
    group: str | None = None
    extra: dict[str, JsonValue] | None = None
    source_task_id: str | None = None
    source_dag_id: str | None = None
    source_run_id: str | None = None
    source_map_index: int
    created_dagruns: list[dict[str, Any]] = []
    timestamp: dt.datetime
    partition_key: str | None = None


class AssetEventCollectionResponse(BaseModel):
    asset_events: list[AssetEventResponse]
    total_entries: int


class CreateAssetEventsBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    asset_id: int = Field(ge=1, le=2**31 - 1)
    partition_key: str | None = Field(default=None, max_length=250, pattern=r"\S")
    extra: dict[str, JsonValue] = Field(default_factory=dict)
    access_control: dict[str, Any] | None = None


class QueuedEventResponse(BaseModel):
    dag_id: str
    asset_id: int
    created_at: dt.datetime
    dag_display_name: str


class QueuedEventCollectionResponse(BaseModel):
    queued_events: list[QueuedEventResponse]
    total_entries: int


def alias_response(alias: AssetAlias) -> AssetAliasResponse:
    return AssetAliasResponse(id=alias.id, name=alias.name, group=alias.group)


def asset_response(view: AssetView) -> AssetResponse:
    asset = view.asset
    scheduled = [
        DagScheduleAssetReference(
            dag_id=dag_id, created_at=asset.created_at, updated_at=asset.created_at
        )
        for dag_id in view.scheduled_dags
    ]
    last = None
    if view.last_event is not None:
        last = LastAssetEventResponse(id=view.last_event[0], timestamp=view.last_event[1])
    return AssetResponse(
        id=asset.id,
        name=asset.name,
        uri=asset.uri,
        group=asset.group,
        extra=asset.extra,
        created_at=asset.created_at,
        updated_at=asset.created_at,
        scheduled_dags=scheduled,
        aliases=[alias_response(alias) for alias in view.aliases],
        last_asset_event=last,
    )


def event_response(row: EventRow) -> AssetEventResponse:
    event = row.event
    return AssetEventResponse(
        id=event.id,
        asset_id=event.asset_id,
        uri=row.uri,
        name=row.name,
        group=row.group,
        extra=event.extra,
        source_task_id=event.source_task_id,
        source_dag_id=event.source_dag_id,
        source_run_id=event.source_run_id,
        source_map_index=event.source_map_index,
        timestamp=event.timestamp,
        partition_key=event.partition_key,
    )


def queued_response(queued: AssetDagRunQueue) -> QueuedEventResponse:
    return QueuedEventResponse(
        dag_id=queued.target_dag_id,
        asset_id=queued.asset_id,
        created_at=queued.created_at,
        dag_display_name=queued.target_dag_id,
    )
