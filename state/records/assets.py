"""Assets in the store: what DAGs wait on, the events tries record, what each DAG has consumed.

The queries the CLI, the scheduler and the API routes share live here. A try's events are
written by ``record_events`` in the transaction that records the try's end
(``state/engine/end.py``), so they exist only if that fenced end was applied. Each event queues its
asset for the DAGs waiting on it (``asset_dag_run_queue``); the scheduler consumes a DAG's queue
when it creates the run the condition asks for (``scheduler/asset_runs.py``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, delete, func, or_, select, update
from sqlalchemy.orm import Session

from state.core import (
    Asset,
    AssetAlias,
    AssetAliasAsset,
    AssetDagRunQueue,
    AssetEvent,
    DagAssetReference,
    PartitionEventQueue,
    insert_for,
    insert_missing,
    utcnow,
)
from tradewind.assets import references


@dataclass(frozen=True)
class OutletEvent:
    """One asset update a try makes: the asset's URI, its extra, and the alias it went through."""

    uri: str
    name: str | None = None
    group: str = "asset"
    extra: Mapping[str, Any] = field(default_factory=dict)
    alias: str | None = None
    partition_key: str | None = None


@dataclass(frozen=True)
class EventSource:
    """The try an event comes from; all None for one created by hand (``POST /assets/events``)."""

    dag_id: str | None
    run_id: str | None
    task_id: str | None
    map_index: int = -1


BY_HAND = EventSource(None, None, None)


def sync_references(
    session: Session, dag_id: str, condition: Mapping[str, Any] | None, known: Iterable[OutletEvent]
) -> None:
    """Store what ``dag_id``'s condition waits on, and the assets it names (its outlets too)."""
    wanted = references(condition) if condition else set()
    session.execute(
        delete(DagAssetReference).where(
            DagAssetReference.dag_id == dag_id, DagAssetReference.reference.not_in(wanted)
        )
    )
    rows = [{"dag_id": dag_id, "reference": ref} for ref in sorted(wanted)]
    insert_missing(session, DagAssetReference, rows, ["dag_id", "reference"])
    register_aliases(session, [ref.removeprefix("alias:") for ref in wanted if ref[:6] == "alias:"])
    named = [event for event in known] + [
        OutletEvent(ref.removeprefix("asset:")) for ref in wanted if ref.startswith("asset:")
    ]
    asset_ids(session, named)
    _name_assets(session, known)


def _name_assets(session: Session, outlets: Iterable[OutletEvent]) -> None:
    """Give the name an outlet declares to its asset if a schedule created it nameless (a
    schedule names an asset by URI only, and the DAG on it may sync before its producer)."""
    for outlet in outlets:
        if outlet.name and outlet.name != outlet.uri:
            session.execute(
                update(Asset)
                .where(Asset.uri == outlet.uri, Asset.name == Asset.uri)
                .values(name=outlet.name)
            )


def asset_ids(session: Session, assets: Sequence[OutletEvent]) -> dict[str, int]:
    """The ids of the assets of ``assets`` by URI, the missing ones created."""
    if not assets:
        return {}
    rows = [
        {
            "uri": a.uri,
            "name": a.name or a.uri,
            "group": a.group,
            "extra": {},
            "created_at": utcnow(),
        }
        for a in {a.uri: a for a in assets}.values()
    ]
    insert_missing(session, Asset, rows, ["uri"])
    found = session.execute(
        select(Asset.uri, Asset.id).where(Asset.uri.in_([a.uri for a in assets]))
    )
    return {uri: asset_id for uri, asset_id in found}


def register_aliases(session: Session, names: Iterable[str]) -> None:
    """Give each alias of ``names`` its id (the REST API names aliases by id)."""
    rows = [{"name": name, "group": "asset"} for name in sorted(set(names))]
    insert_missing(session, AssetAlias, rows, ["name"])


def record_events(
    session: Session, source: EventSource, events: Sequence[OutletEvent], at: dt.datetime
) -> list[AssetEvent]:
    """Write ``events`` of one try and queue their assets for the DAGs waiting on them."""
    ids = asset_ids(session, events)
    rows = []
    for event in events:
        rows.append(
            AssetEvent(
                asset_id=ids[event.uri],
                extra=dict(event.extra),
                source_dag_id=source.dag_id,
                source_run_id=source.run_id,
                source_task_id=source.task_id,
                source_map_index=source.map_index,
                source_alias=event.alias,
                partition_key=event.partition_key,
                timestamp=at,
            )
        )
    session.add_all(rows)
    session.flush()  # the events' ids: the queue keeps the latest of each asset
    latest = {row.asset_id: row.id for row in rows}
    keyed = [(row.asset_id, row.id) for row in rows if row.partition_key is not None]
    resolved = [{"alias_name": e.alias, "asset_id": ids[e.uri]} for e in events if e.alias]
    insert_missing(session, AssetAliasAsset, resolved, ["alias_name", "asset_id"])
    register_aliases(session, [e.alias for e in events if e.alias])
    _queue_for_consumers(session, events, ids, latest, at, keyed)
    return rows


def _queue_for_consumers(
    session: Session,
    events: Sequence[OutletEvent],
    ids: Mapping[str, int],
    latest: Mapping[int, int],
    at: dt.datetime,
    keyed: Sequence[tuple[int, int]],
) -> None:
    by_reference: dict[str, set[int]] = {}
    for event in events:
        by_reference.setdefault(f"asset:{event.uri}", set()).add(ids[event.uri])
        by_reference.setdefault(f"name:{event.name or event.uri}", set()).add(ids[event.uri])
        if event.alias:
            by_reference.setdefault(f"alias:{event.alias}", set()).add(ids[event.uri])
    consumers = session.execute(
        select(DagAssetReference.dag_id, DagAssetReference.reference).where(
            DagAssetReference.reference.in_(list(by_reference))
        )
    ).all()
    # Each event with a partition key, for every DAG waiting on its asset: a partitioned DAG
    # maps them one by one (scheduler/partition_runs.py); any other drops them with its queue.
    partitioned = [
        {"target_dag_id": dag_id, "asset_event_id": event_id}
        for dag_id, reference in consumers
        for asset_id, event_id in keyed
        if asset_id in by_reference[reference]
    ]
    insert_missing(session, PartitionEventQueue, partitioned, ["target_dag_id", "asset_event_id"])
    rows = [
        {
            "target_dag_id": dag_id,
            "asset_id": asset_id,
            "last_event_id": latest[asset_id],
            "created_at": at,
        }
        for dag_id, reference in consumers
        for asset_id in sorted(by_reference[reference])
    ]
    rows = list({(r["target_dag_id"], r["asset_id"]): r for r in rows}.values())
    if not rows:
        return
    # An asset already queued takes the newer event's id: a scheduler consuming the older one
    # (consume) then leaves the row, and this update, for the next run.
    statement = insert_for(session)(AssetDagRunQueue).values(rows)
    session.execute(
        statement.on_conflict_do_update(
            index_elements=["target_dag_id", "asset_id"],
            set_={"last_event_id": statement.excluded.last_event_id},
        )
    )


@dataclass(frozen=True)
class Queued:
    """An asset on a DAG's queue, and the latest event that put it there."""

    asset_id: int
    last_event_id: int


def queued_assets(session: Session, dag_id: str) -> dict[str, Queued]:
    """The assets updated since ``dag_id``'s last asset-triggered run, by URI and by
    ``name:<name>`` too (``Asset.ref(name=...)`` names an asset by its name)."""
    rows = session.execute(
        select(Asset.uri, Asset.name, Asset.id, AssetDagRunQueue.last_event_id)
        .join(AssetDagRunQueue, AssetDagRunQueue.asset_id == Asset.id)
        .where(AssetDagRunQueue.target_dag_id == dag_id)
    )
    queued: dict[str, Queued] = {}
    for uri, name, asset_id, last_event_id in rows:
        queued[uri] = queued[f"name:{name}"] = Queued(asset_id, last_event_id)
    return queued


def consume(session: Session, dag_id: str, seen: Iterable[Queued]) -> None:
    """Take what a new run of ``dag_id`` consumed off its queue: an asset updated again since
    it was read (a newer ``last_event_id``) stays queued."""
    matches = [
        and_(
            AssetDagRunQueue.asset_id == q.asset_id,
            AssetDagRunQueue.last_event_id <= q.last_event_id,
        )
        for q in set(seen)
    ]
    if matches:
        session.execute(
            delete(AssetDagRunQueue).where(AssetDagRunQueue.target_dag_id == dag_id, or_(*matches))
        )


def alias_resolutions(session: Session, names: Iterable[str]) -> dict[str, set[str]]:
    """The asset URIs each alias of ``names`` has resolved to."""
    resolved: dict[str, set[str]] = {name: set() for name in names}
    rows = session.execute(
        select(AssetAliasAsset.alias_name, Asset.uri)
        .join(Asset, Asset.id == AssetAliasAsset.asset_id)
        .where(AssetAliasAsset.alias_name.in_(list(resolved)))
    )
    for name, uri in rows:
        resolved[name].add(uri)
    return resolved


@dataclass(frozen=True)
class AssetSummary:
    uri: str
    name: str
    group: str
    events: int
    last_event_at: dt.datetime | None
    consumers: tuple[str, ...]


def list_assets(session: Session) -> list[AssetSummary]:
    """Every asset with its event count, last event and the DAGs scheduled on it."""
    counts = {
        asset_id: (count, last)
        for asset_id, count, last in session.execute(
            select(AssetEvent.asset_id, func.count(), func.max(AssetEvent.timestamp)).group_by(
                AssetEvent.asset_id
            )
        )
    }
    consumers: dict[str, list[str]] = {}
    for dag_id, reference in session.execute(
        select(DagAssetReference.dag_id, DagAssetReference.reference)
    ):
        consumers.setdefault(reference.removeprefix("asset:"), []).append(dag_id)
    return [
        AssetSummary(
            a.uri,
            a.name,
            a.group,
            counts.get(a.id, (0, None))[0],
            counts.get(a.id, (0, None))[1],
            tuple(sorted(consumers.get(a.uri, []))),
        )
        for a in session.scalars(select(Asset).order_by(Asset.uri))
    ]


@dataclass(frozen=True)
class EventView:
    id: int
    uri: str
    extra: Mapping[str, Any]
    source_dag_id: str | None
    source_run_id: str | None
    source_task_id: str | None
    source_map_index: int
    source_alias: str | None
    partition_key: str | None
    timestamp: dt.datetime


def list_events(
    session: Session,
    uri: str | None = None,
    *,
    source_dag_id: str | None = None,
    source_run_id: str | None = None,
    limit: int = 100,
) -> list[EventView]:
    """Asset events, newest first, of one asset or one source run if given."""
    query = select(AssetEvent, Asset.uri).join(Asset, Asset.id == AssetEvent.asset_id)
    if uri is not None:
        query = query.where(Asset.uri == uri)
    if source_dag_id is not None:
        query = query.where(AssetEvent.source_dag_id == source_dag_id)
    if source_run_id is not None:
        query = query.where(AssetEvent.source_run_id == source_run_id)
    rows = session.execute(query.order_by(AssetEvent.id.desc()).limit(limit))
    return [
        EventView(
            e.id,
            event_uri,
            e.extra,
            e.source_dag_id,
            e.source_run_id,
            e.source_task_id,
            e.source_map_index,
            e.source_alias,
            e.partition_key,
            e.timestamp,
        )
        for e, event_uri in rows
    ]


def asset_events_for_task(session: Session, uri: str, limit: int = 1000) -> list[dict[str, Any]]:
    """An asset's events (an alias's, as ``alias:<name>``), newest first, as a task reads them."""
    if uri.startswith("alias:"):
        views = _alias_events(session, uri.removeprefix("alias:"), limit)
    else:
        views = list_events(session, uri, limit=limit)
    return [
        {
            "uri": view.uri,
            "extra": dict(view.extra),
            "timestamp": view.timestamp.isoformat(),
            "source_dag_id": view.source_dag_id,
            "source_run_id": view.source_run_id,
            "source_task_id": view.source_task_id,
            "source_map_index": view.source_map_index,
            "source_alias": view.source_alias,
            "partition_key": view.partition_key,
        }
        for view in views
    ]


def _alias_events(session: Session, alias: str, limit: int) -> list[EventView]:
    uris = alias_resolutions(session, [alias])[alias]
    events = [event for uri in sorted(uris) for event in list_events(session, uri, limit=limit)]
    return sorted(events, key=lambda event: event.id, reverse=True)[:limit]


def events_of_success(
    outlets: Sequence[Mapping[str, Any]], sent: Sequence[Mapping[str, Any]]
) -> tuple[OutletEvent, ...]:
    """The events a success records: one per asset outlet (with the extra the task set on it;
    one per partition key when it named some), and one per asset the task added to an alias
    outlet (``outlet_events[alias].add``)."""
    own = {item["uri"]: item for item in sent if not item.get("alias")}
    aliases = {outlet["alias"] for outlet in outlets if "alias" in outlet}
    events: list[OutletEvent] = []
    for outlet in outlets:
        if "asset" in outlet:
            events += _outlet_events(outlet, own.get(outlet["asset"], {}))
    for item in sent:
        if item.get("alias") in aliases:
            group = item.get("group", "asset")
            extra = item.get("extra") or {}
            events.append(OutletEvent(item["uri"], item.get("name"), group, extra, item["alias"]))
    return tuple(events)


def _outlet_events(outlet: Mapping[str, Any], item: Mapping[str, Any]) -> list[OutletEvent]:
    uri, name, group = outlet["asset"], outlet.get("name"), outlet.get("group", "asset")
    extra = {**(outlet.get("extra") or {}), **(item.get("extra") or {})}
    keys = item.get("partition_keys") or [None]
    return [OutletEvent(uri, name, group, extra, partition_key=key) for key in keys]
