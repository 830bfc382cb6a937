"""The bookkeeping of partitioned DAGs: the keyed events each has not mapped yet, one row per
downstream partition, and the events mapped to it.

A try's end queues each event carrying a partition key for the DAGs waiting on its asset
(``PartitionEventQueue``, written by ``state/records/assets.py``). The scheduler maps them to
downstream keys (``scheduler/partition_runs.py``) and records here, in one transaction: a row per
downstream key (``partition_dag_run``, unique per DAG and key), each event against the row of
its key, and the events taken off the queue. A row gets its run once; the unique key is what
keeps two schedulers from making two rows, and so two runs, of one key.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import delete, or_, select, union, update
from sqlalchemy.orm import Session

from state.core import (
    Asset,
    AssetDagRunQueue,
    AssetEvent,
    PartitionDagRun,
    PartitionEventQueue,
    PartitionKeyLog,
    insert_missing,
)


@dataclass(frozen=True)
class KeyedEvent:
    """An event a partitioned DAG has to map: its asset, and the key it carries."""

    id: int
    asset_id: int
    uri: str
    name: str
    partition_key: str


@dataclass(frozen=True)
class Contribution:
    """An event mapped to one downstream key."""

    downstream_key: str
    event: KeyedEvent


@dataclass(frozen=True)
class PendingPartition:
    """A downstream partition without its run yet, and the upstream keys that reached it, per
    asset (its URI and name)."""

    id: int
    partition_key: str
    arrived: dict[tuple[str, str], set[str]]


def queued_keyed_events(session: Session, dag_id: str) -> list[KeyedEvent]:
    """The keyed events ``dag_id`` has not mapped yet, oldest first."""
    rows = session.execute(
        select(AssetEvent.id, AssetEvent.asset_id, Asset.uri, Asset.name, AssetEvent.partition_key)
        .join(PartitionEventQueue, PartitionEventQueue.asset_event_id == AssetEvent.id)
        .join(Asset, Asset.id == AssetEvent.asset_id)
        .where(PartitionEventQueue.target_dag_id == dag_id)
        .order_by(AssetEvent.id)
    )
    return [KeyedEvent(e_id, a_id, uri, name, key or "") for e_id, a_id, uri, name, key in rows]


def record_contributions(
    session: Session, dag_id: str, mapped: Sequence[Contribution], taken: Iterable[int]
) -> set[str]:
    """Log ``mapped`` against the rows of their keys (made when missing), and take the events
    ``taken`` off ``dag_id``'s queue. Returns the keys that received an event."""
    keys = sorted({c.downstream_key for c in mapped})
    rows = [{"target_dag_id": dag_id, "partition_key": key} for key in keys]
    insert_missing(session, PartitionDagRun, rows, ["target_dag_id", "partition_key"])
    ids = dict(
        session.execute(
            select(PartitionDagRun.partition_key, PartitionDagRun.id).where(
                PartitionDagRun.target_dag_id == dag_id, PartitionDagRun.partition_key.in_(keys)
            )
        ).all()
    )
    logged = [
        {
            "partition_run_id": ids[c.downstream_key],
            "asset_event_id": c.event.id,
            "asset_id": c.event.asset_id,
            "source_partition_key": c.event.partition_key,
        }
        for c in mapped
    ]
    insert_missing(session, PartitionKeyLog, logged, ["partition_run_id", "asset_event_id"])
    done = list(taken)
    if done:
        session.execute(
            delete(PartitionEventQueue).where(
                PartitionEventQueue.target_dag_id == dag_id,
                PartitionEventQueue.asset_event_id.in_(done),
            )
        )
    return set(keys)


def pending_partitions(
    session: Session, dag_id: str, touched: Iterable[str]
) -> list[PendingPartition]:
    """The rows of ``dag_id`` without a run that received an event now (``touched``) or were
    found ready before, oldest first, with what reached each."""
    found = session.execute(
        select(PartitionDagRun.id, PartitionDagRun.partition_key)
        .where(
            PartitionDagRun.target_dag_id == dag_id,
            PartitionDagRun.run_id.is_(None),
            or_(
                PartitionDagRun.partition_key.in_(list(touched)),
                PartitionDagRun.ready_at.is_not(None),
            ),
        )
        .order_by(PartitionDagRun.id)
    ).all()
    pending = {row_id: PendingPartition(row_id, key, {}) for row_id, key in found}
    logged = session.execute(
        select(PartitionKeyLog.partition_run_id, Asset.uri, Asset.name)
        .add_columns(PartitionKeyLog.source_partition_key)
        .join(Asset, Asset.id == PartitionKeyLog.asset_id)
        .where(PartitionKeyLog.partition_run_id.in_(list(pending)))
    )
    for row_id, uri, name, source_key in logged:
        pending[row_id].arrived.setdefault((uri, name), set()).add(source_key)
    return list(pending.values())


def runs_of_keys(session: Session, dag_id: str, keys: Iterable[str]) -> dict[str, str]:
    """The run already created for each of ``keys`` that has one."""
    rows = session.execute(
        select(PartitionDagRun.partition_key, PartitionDagRun.run_id).where(
            PartitionDagRun.target_dag_id == dag_id,
            PartitionDagRun.partition_key.in_(list(keys)),
            PartitionDagRun.run_id.is_not(None),
        )
    )
    return {key: run_id for key, run_id in rows if run_id is not None}


def mark_ready(session: Session, row_ids: Sequence[int], at: dt.datetime) -> None:
    """Note that these rows' conditions hold, for when a run slot frees up."""
    if row_ids:
        session.execute(
            update(PartitionDagRun)
            .where(PartitionDagRun.id.in_(row_ids), PartitionDagRun.ready_at.is_(None))
            .values(ready_at=at)
        )


def claim_partition(session: Session, row_id: int, run_id: str) -> bool:
    """Give the row its run, if it has none: False when another scheduler gave it one."""
    claimed = session.execute(
        update(PartitionDagRun)
        .where(PartitionDagRun.id == row_id, PartitionDagRun.run_id.is_(None))
        .values(run_id=run_id)
    )
    return bool(claimed.rowcount)  # type: ignore[attr-defined]


def dags_with_work(session: Session) -> list[str]:
    """The DAGs with asset updates they have not consumed, or with a partition whose condition
    held while its run could not be created: one statement, as an idle loop's only one."""
    ready = select(PartitionDagRun.target_dag_id).where(
        PartitionDagRun.run_id.is_(None), PartitionDagRun.ready_at.is_not(None)
    )
    query = union(select(AssetDagRunQueue.target_dag_id), ready)
    return sorted(session.scalars(select(query.subquery().c[0])))


def drop_keyed_events(session: Session, dag_id: str) -> None:
    """Empty ``dag_id``'s queue of keyed events: a DAG that is not partitioned has no use for
    them (its queue of updated assets is what schedules it)."""
    session.execute(delete(PartitionEventQueue).where(PartitionEventQueue.target_dag_id == dag_id))
