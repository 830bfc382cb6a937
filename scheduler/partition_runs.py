"""The runs of partitioned DAGs: one per downstream partition key, once its assets are there.

A DAG scheduled by a ``PartitionedAssetTimetable`` is not run when its assets are updated but
when a *partition* of it is complete. With the DAG's row locked (``scheduler/asset_runs.py``),
each loop: every keyed event the DAG has not mapped yet goes through the mapper of its asset
(``to_downstream``: one key, or several for a fan-out) and is logged against the row of each
downstream key (``state/records/partitions.py``). Then each row that received an event, or was ready
before, is checked: its asset condition holds when each asset it needs has an event for the
key, and for a rollup, when the upstream keys that arrived satisfy its wait policy over its
window. A row that holds gets its run, carrying the key (``dag_run.partition_key``), and keeps
it: a later event for the same key is recorded and creates no second run.

A key a mapper refuses (``AllowedKeyMapper`` and a key not allowed, a timestamp in another
format) is one warning line in the scheduler's log naming the event, the key and why; that
event is dropped for that DAG and nothing else is affected.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from sqlalchemy.orm import Session

from state.core import DagStructure
from state.engine import create_run
from state.records import (
    Contribution,
    KeyedEvent,
    PendingPartition,
    Queued,
    claim_partition,
    consume,
    mark_ready,
    pending_partitions,
    queued_keyed_events,
    record_contributions,
    runs_of_keys,
)
from tradewind.assets import InvalidAsset
from tradewind.partition_specs import Mappers
from tradewind.partitions import RollupMapper

log = logging.getLogger("tradewind.scheduler")

ASSET_TRIGGERED = "asset_triggered"
_MAX_RUN_ID = 250


@dataclass(frozen=True)
class Mapped:
    """What the mappers made of a batch of events: the contributions, and one line per refusal."""

    contributions: list[Contribution]
    refusals: list[str]


def map_events(dag_id: str, mappers: Mappers, events: Iterable[KeyedEvent]) -> Mapped:
    """Each event through the mapper of its asset: a contribution per downstream key, or a
    line saying why its key was refused."""
    contributions: list[Contribution] = []
    refusals: list[str] = []
    for event in events:
        mapper = mappers.of(event.uri, event.name)
        try:
            keys = mapper.to_downstream(event.partition_key)
        except InvalidAsset as error:
            refusals.append(
                f"DAG {dag_id}: partition key {event.partition_key!r} of asset {event.uri!r} "
                f"(event {event.id}) refused, the event is ignored: {error}"
            )
            continue
        for key in [keys] if isinstance(keys, str) else keys:
            contributions.append(Contribution(key, event))
    return Mapped(contributions, refusals)


def complete_assets(mappers: Mappers, pending: PendingPartition) -> set[str]:
    """The assets (URIs, and ``name:<name>``) whose part of ``pending`` is there: any event for
    the key, or for a rollup, enough of its window's upstream keys."""
    complete: set[str] = set()
    for (uri, name), arrived in pending.arrived.items():
        mapper = mappers.of(uri, name)
        if isinstance(mapper, RollupMapper):
            expected = mapper.expected(pending.partition_key)
            if not mapper.wait_policy.satisfied(arrived, expected):
                continue
        complete |= {uri, f"name:{name}"}
    return complete


def partition_run_id(key: str, row_id: int) -> str:
    """The run id of a partition's run: the key, made safe for a URL path (percent-encoded, so
    two keys never share one), or the row's number when that would be too long."""
    run_id = f"{ASSET_TRIGGERED}__{quote(key, safe=':+,=@')}"
    return run_id if len(run_id) <= _MAX_RUN_ID else f"{ASSET_TRIGGERED}__partition_{row_id}"


def create_partition_runs(
    session: Session,
    dag_id: str,
    structure: DagStructure,
    queued: Mapping[str, Queued],
    holds: Callable[[set[str]], bool],
    active_runs: int,
    now: dt.datetime,
) -> list[str]:
    """Map the DAG's new keyed events, then create a run for each partition that is complete,
    up to ``max_active_runs``; the others wait (``ready_at``) for a slot."""
    mappers = _mappers_of(structure)
    events = queued_keyed_events(session, dag_id)
    mapped = map_events(dag_id, mappers, events)
    for line in mapped.refusals:
        log.warning(line)
    _warn_unkeyed(dag_id, queued, events)
    touched = record_contributions(session, dag_id, mapped.contributions, [e.id for e in events])
    consume(session, dag_id, queued.values())
    for key, existing in sorted(runs_of_keys(session, dag_id, touched).items()):
        log.info("DAG %s: partition %r already has run %s: event recorded", dag_id, key, existing)
    created: list[str] = []
    waiting: list[int] = []
    for pending in pending_partitions(session, dag_id, touched):
        if not _holds_for(dag_id, mappers, pending, holds):
            continue
        if active_runs + len(created) >= structure.max_active_runs:
            waiting.append(pending.id)
            continue
        run_id = _create(session, dag_id, mappers, pending, now)
        if run_id is not None:
            created.append(run_id)
    mark_ready(session, waiting, now)
    return created


def _holds_for(
    dag_id: str, mappers: Mappers, pending: PendingPartition, holds: Callable[[set[str]], bool]
) -> bool:
    try:
        return holds(complete_assets(mappers, pending))
    except InvalidAsset as error:  # a rollup's window cannot be read from this key
        log.warning("DAG %s: partition %r not checked: %s", dag_id, pending.partition_key, error)
        return False


def _create(
    session: Session, dag_id: str, mappers: Mappers, pending: PendingPartition, now: dt.datetime
) -> str | None:
    key = pending.partition_key
    run_id = partition_run_id(key, pending.id)
    if not claim_partition(session, pending.id, run_id):
        return None  # its run exists already
    run = create_run(
        session,
        dag_id,
        run_id=run_id,
        run_type=ASSET_TRIGGERED,
        data_interval=(now, now),
        partition=(key, _partition_date(mappers, pending)),
    )
    log.info("created run %s of %s: partition %r is complete", run.run_id, dag_id, key)
    return run.run_id


def _partition_date(mappers: Mappers, pending: PendingPartition) -> dt.datetime | None:
    """The period's start, when the mappers of the partition's assets agree on one."""
    dates = set()
    for uri, name in pending.arrived:
        try:
            dates.add(mappers.of(uri, name).partition_date(pending.partition_key))
        except InvalidAsset:
            dates.add(None)
    return dates.pop() if len(dates) == 1 else None


def _warn_unkeyed(dag_id: str, queued: Mapping[str, Queued], events: list[KeyedEvent]) -> None:
    """An update with no key cannot be mapped: say so (the queue holds each asset by URI and by
    ``name:<name>``; the URI is the one to name)."""
    keyed = {event.asset_id for event in events}
    for uri, seen in sorted(queued.items()):
        if seen.asset_id not in keyed and not uri.startswith("name:"):
            log.warning("DAG %s is partitioned: an update of %r had no partition key", dag_id, uri)


def _mappers_of(structure: DagStructure) -> Mappers:
    memo: dict[Any, Any] = structure.memo
    if "mappers" not in memo:
        assert structure.partition_mappers is not None  # only a partitioned DAG comes here
        memo["mappers"] = Mappers(structure.partition_mappers)
    mappers: Mappers = memo["mappers"]
    return mappers
