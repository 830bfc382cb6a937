"""The asset listings the API server pages through: assets, aliases, events, queued updates.

Each page costs a fixed number of statements: the page and its total (``page_of``), then one
statement per detail (the DAGs scheduled on the page's assets, their aliases, their last
events), whatever the number of assets or events stored. Patterns match as
``state.views.listing``'s.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, func, literal, or_, select
from sqlalchemy.orm import Session

from state.core import (
    Asset,
    AssetAlias,
    AssetAliasAsset,
    AssetDagRunQueue,
    AssetEvent,
    DagAssetReference,
    NotFound,
    Page,
    page_of,
)
from state.records import BY_HAND, OutletEvent, record_events
from state.views.listing import contains, present, starts_with

_ASSET_ORDER = {"id": Asset.id, "name": Asset.name, "uri": Asset.uri, "group": Asset.group}
_ALIAS_ORDER = {"id": AssetAlias.id, "name": AssetAlias.name}
_EVENT_ORDER = {
    "id": AssetEvent.id,
    "timestamp": AssetEvent.timestamp,
    "asset_id": AssetEvent.asset_id,
    "source_dag_id": AssetEvent.source_dag_id,
    "source_task_id": AssetEvent.source_task_id,
    "source_run_id": AssetEvent.source_run_id,
    "source_map_index": AssetEvent.source_map_index,
}


@dataclass(frozen=True)
class AssetFilter:
    name_pattern: str | None = None
    name_prefix: str | None = None
    uri_pattern: str | None = None
    uri_prefix: str | None = None
    dag_ids: Collection[str] = ()


@dataclass(frozen=True)
class AssetView:
    """An asset with the DAGs scheduled on it, the aliases resolved to it, its last event."""

    asset: Asset
    scheduled_dags: tuple[str, ...]
    aliases: tuple[AssetAlias, ...]
    last_event: tuple[int, dt.datetime] | None


def _references_of(asset: Any) -> list[ColumnElement[str]]:
    """What a DAG's reference to ``asset`` reads: ``asset:<uri>`` or ``name:<name>``."""
    return [literal("asset:") + asset.uri, literal("name:") + asset.name]


def _used_by(dag_ids: Collection[str]) -> ColumnElement[bool]:
    """The asset is scheduled on by one of ``dag_ids``, or one of them updated it."""
    scheduled = select(DagAssetReference.dag_id).where(
        DagAssetReference.dag_id.in_(list(dag_ids)),
        DagAssetReference.reference.in_(_references_of(Asset)),
    )
    produced = select(AssetEvent.id).where(
        AssetEvent.asset_id == Asset.id, AssetEvent.source_dag_id.in_(list(dag_ids))
    )
    return or_(scheduled.exists(), produced.exists())


def list_assets_page(
    session: Session, page: Page, where: AssetFilter
) -> tuple[list[AssetView], int]:
    query = select(Asset).where(
        *present(
            contains(Asset.name, where.name_pattern),
            starts_with(Asset.name, where.name_prefix),
            contains(Asset.uri, where.uri_pattern),
            starts_with(Asset.uri, where.uri_prefix),
            _used_by(where.dag_ids) if where.dag_ids else None,
        )
    )
    rows, total = page_of(session, query, page, _ASSET_ORDER, ["id"])
    return _asset_views(session, [row[0] for row in rows]), total


def get_asset_view(session: Session, asset_id: int) -> AssetView:
    asset = session.get(Asset, asset_id)
    if asset is None:
        raise NotFound(f"no asset with id {asset_id}")
    return _asset_views(session, [asset])[0]


def _asset_views(session: Session, assets: Sequence[Asset]) -> list[AssetView]:
    """The page's assets with their details: three statements whatever the page's size."""
    ids = [a.id for a in assets]
    scheduled = _scheduled_on(session, assets)
    aliases = _aliases_of(session, ids)
    last = _last_events(session, ids)
    return [
        AssetView(a, scheduled[a.id], tuple(aliases.get(a.id, [])), last.get(a.id)) for a in assets
    ]


def _scheduled_on(session: Session, assets: Sequence[Asset]) -> dict[int, tuple[str, ...]]:
    """The DAGs scheduled on each asset, by its URI or by its name."""
    wanted = {f"asset:{a.uri}" for a in assets} | {f"name:{a.name}" for a in assets}
    by_reference: dict[str, set[str]] = {}
    for dag_id, reference in session.execute(
        select(DagAssetReference.dag_id, DagAssetReference.reference).where(
            DagAssetReference.reference.in_(sorted(wanted))
        )
    ):
        by_reference.setdefault(reference, set()).add(dag_id)
    return {
        a.id: tuple(
            sorted(
                by_reference.get(f"asset:{a.uri}", set())
                | by_reference.get(f"name:{a.name}", set())
            )
        )
        for a in assets
    }


def _aliases_of(session: Session, ids: Sequence[int]) -> dict[int, list[AssetAlias]]:
    aliases: dict[int, list[AssetAlias]] = {}
    for asset_id, alias in session.execute(
        select(AssetAliasAsset.asset_id, AssetAlias)
        .join(AssetAlias, AssetAlias.name == AssetAliasAsset.alias_name)
        .where(AssetAliasAsset.asset_id.in_(ids))
        .order_by(AssetAlias.id)
    ):
        aliases.setdefault(asset_id, []).append(alias)
    return aliases


def _last_events(session: Session, ids: Sequence[int]) -> dict[int, tuple[int, dt.datetime]]:
    newest = (
        select(func.max(AssetEvent.id))
        .where(AssetEvent.asset_id.in_(ids))
        .group_by(AssetEvent.asset_id)
    )
    rows = session.execute(
        select(AssetEvent.asset_id, AssetEvent.id, AssetEvent.timestamp).where(
            AssetEvent.id.in_(newest)
        )
    )
    return {asset_id: (event_id, at) for asset_id, event_id, at in rows}


def asset_producers(session: Session, asset_id: int, limit: int = 50) -> list[str]:
    """The DAGs whose tasks have updated the asset (from its events), each once, by id."""
    query = (
        select(AssetEvent.source_dag_id)
        .where(AssetEvent.asset_id == asset_id, AssetEvent.source_dag_id.is_not(None))
        .distinct()
        .order_by(AssetEvent.source_dag_id)
        .limit(limit)
    )
    return [dag_id for dag_id in session.scalars(query) if dag_id is not None]


def list_aliases_page(
    session: Session, page: Page, name_pattern: str | None, name_prefix: str | None
) -> tuple[list[AssetAlias], int]:
    query = select(AssetAlias).where(
        *present(contains(AssetAlias.name, name_pattern), starts_with(AssetAlias.name, name_prefix))
    )
    rows, total = page_of(session, query, page, _ALIAS_ORDER, ["id"])
    return [row[0] for row in rows], total


def get_alias(session: Session, alias_id: int) -> AssetAlias:
    alias = session.get(AssetAlias, alias_id)
    if alias is None:
        raise NotFound(f"no asset alias with id {alias_id}")
    return alias


@dataclass(frozen=True)
class EventFilter:
    asset_id: int | None = None
    source_dag_id: str | None = None
    source_task_id: str | None = None
    source_run_id: str | None = None
    source_map_index: int | None = None
    name_pattern: str | None = None
    name_prefix: str | None = None
    # Bounds on the timestamp: (gte, gt, lte, lt), each None when not asked.
    after: tuple[dt.datetime | None, dt.datetime | None] = (None, None)
    before: tuple[dt.datetime | None, dt.datetime | None] = (None, None)


@dataclass(frozen=True)
class EventRow:
    """One event with its asset's URI, name and group."""

    event: AssetEvent
    uri: str
    name: str
    group: str


def _event_conditions(where: EventFilter) -> list[ColumnElement[bool]]:
    def equal(column: Any, value: object) -> ColumnElement[bool] | None:
        return column == value if value is not None else None

    at = AssetEvent.timestamp
    (gte, gt), (lte, lt) = where.after, where.before
    return present(
        equal(AssetEvent.asset_id, where.asset_id),
        equal(AssetEvent.source_dag_id, where.source_dag_id),
        equal(AssetEvent.source_task_id, where.source_task_id),
        equal(AssetEvent.source_run_id, where.source_run_id),
        equal(AssetEvent.source_map_index, where.source_map_index),
        contains(Asset.name, where.name_pattern),
        starts_with(Asset.name, where.name_prefix),
        at >= gte if gte else None,
        at > gt if gt else None,
        at <= lte if lte else None,
        at < lt if lt else None,
    )


def list_events_page(
    session: Session, page: Page, where: EventFilter
) -> tuple[list[EventRow], int]:
    query = (
        select(AssetEvent, Asset.uri, Asset.name, Asset.group)
        .join(Asset, Asset.id == AssetEvent.asset_id)
        .where(*_event_conditions(where))
    )
    rows, total = page_of(session, query, page, _EVENT_ORDER, ["timestamp"])
    return [EventRow(*row) for row in rows], total


@dataclass(frozen=True)
class HandMadeEvent:
    """An asset update a person asks for (``POST /assets/events``)."""

    asset_id: int
    extra: Mapping[str, Any] = field(default_factory=dict)
    partition_key: str | None = None


def create_event_by_hand(session: Session, made: HandMadeEvent, at: dt.datetime) -> EventRow:
    """Record an update of an asset no try made; the DAGs waiting on it are queued as for a
    try's (the scheduler then creates their runs)."""
    asset = session.get(Asset, made.asset_id)
    if asset is None:
        raise NotFound(f"no asset with id {made.asset_id}")
    outlet = OutletEvent(
        asset.uri, asset.name, asset.group, made.extra, partition_key=made.partition_key
    )
    (event,) = record_events(session, BY_HAND, [outlet], at)
    return EventRow(event, asset.uri, asset.name, asset.group)


def queued_for_dag(
    session: Session, dag_id: str, before: dt.datetime | None
) -> list[AssetDagRunQueue]:
    """The asset updates ``dag_id`` has not consumed yet (queued before ``before`` if given)."""
    query = select(AssetDagRunQueue).where(AssetDagRunQueue.target_dag_id == dag_id)
    if before is not None:
        query = query.where(AssetDagRunQueue.created_at < before)
    return list(session.scalars(query.order_by(AssetDagRunQueue.asset_id)))
