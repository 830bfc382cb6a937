"""What a try's context reads of other rows, on request: the DAG's previous successful run, how
many task instances a mapped task expanded to, the asset events that created an asset run.

A task asks for these only when it reads one of the keys (``prev_start_date_success``,
``expanded_ti_count``, ``triggering_asset_events``...): the supervisor answers ``GetRunFacts``
with ``run_facts``, so a try that reads none of them costs no statement.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from state.core import Asset, AssetEvent, DagAssetReference, DagRun, TaskInstance
from state.records.assets import alias_resolutions

#: The run type of a run an asset update created (scheduler/asset_runs.py).
ASSET_TRIGGERED = "asset_triggered"
#: At most this many triggering events per asset reach a task.
EVENTS_PER_ASSET = 1000


def run_facts(session: Session, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
    """The three facts, each JSON-ready: ``prev_success`` (dates, or None), the task's
    ``expanded_ti_count`` (None when it is not mapped), ``triggering_asset_events``."""
    run = session.scalars(select(DagRun).filter_by(dag_id=dag_id, run_id=run_id)).one()
    return {
        "prev_success": previous_success(session, run),
        "expanded_ti_count": expanded_ti_count(session, dag_id, run_id, task_id),
        "triggering_asset_events": triggering_events(session, run),
    }


def previous_success(session: Session, run: DagRun) -> dict[str, str | None] | None:
    """The latest successful run of the DAG with an earlier logical date (Airflow's rule); a
    run without a logical date has none."""
    if run.logical_date is None:
        return None
    previous = session.scalars(
        select(DagRun)
        .where(
            DagRun.dag_id == run.dag_id,
            DagRun.logical_date < run.logical_date,
            DagRun.state == "success",
        )
        .order_by(DagRun.logical_date.desc())
        .limit(1)
    ).first()
    if previous is None:
        return None
    return {
        "start_date": _iso(previous.start_date),
        "end_date": _iso(previous.end_date),
        "data_interval_start": _iso(previous.data_interval_start),
        "data_interval_end": _iso(previous.data_interval_end),
    }


def expanded_ti_count(session: Session, dag_id: str, run_id: str, task_id: str) -> int | None:
    """How many map indexes the task has in the run; None for a task that is not mapped."""
    indexes = session.execute(
        select(func.count(), func.max(TaskInstance.map_index)).where(
            TaskInstance.dag_id == dag_id,
            TaskInstance.run_id == run_id,
            TaskInstance.task_id == task_id,
            TaskInstance.map_index >= 0,
        )
    ).one()
    return int(indexes[0]) if indexes[0] else None


def triggering_events(session: Session, run: DagRun) -> list[dict[str, Any]]:
    """The events of the DAG's assets since its previous asset run was created, up to this
    one's creation: what the scheduler consumed when it created ``run``."""
    if run.run_type != ASSET_TRIGGERED:
        return []
    since = session.scalar(
        select(func.max(DagRun.created_at)).where(
            DagRun.dag_id == run.dag_id,
            DagRun.run_type == ASSET_TRIGGERED,
            DagRun.created_at < run.created_at,
        )
    )
    uris = _watched_uris(session, run.dag_id)
    query = (
        select(AssetEvent, Asset.uri, Asset.name)
        .join(Asset, Asset.id == AssetEvent.asset_id)
        .where(Asset.uri.in_(uris), AssetEvent.timestamp <= run.created_at)
        .order_by(AssetEvent.id)
    )
    if since is not None:
        query = query.where(AssetEvent.timestamp > since)
    return [_event(event, uri, name) for event, uri, name in session.execute(query)]


def _watched_uris(session: Session, dag_id: str) -> list[str]:
    """The URIs of the assets the DAG's condition names, its aliases resolved."""
    references = session.scalars(
        select(DagAssetReference.reference).where(DagAssetReference.dag_id == dag_id)
    ).all()
    uris = {ref.removeprefix("asset:") for ref in references if ref.startswith("asset:")}
    aliases = [ref.removeprefix("alias:") for ref in references if ref.startswith("alias:")]
    for resolved in alias_resolutions(session, aliases).values():
        uris |= resolved
    return sorted(uris)


def _event(event: AssetEvent, uri: str, name: str) -> dict[str, Any]:
    return {
        "uri": uri,
        "name": name,
        "extra": dict(event.extra or {}),
        "timestamp": _iso(event.timestamp),
        "source_dag_id": event.source_dag_id,
        "source_run_id": event.source_run_id,
        "source_task_id": event.source_task_id,
        "source_map_index": event.source_map_index,
        "source_alias": event.source_alias,
        "partition_key": event.partition_key,
    }


def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None
