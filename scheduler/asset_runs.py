"""Creating the runs of asset-scheduled DAGs once their asset condition holds.

A try's end queues each asset it updated for the DAGs waiting on it (``state/records/assets.py``).
Each loop, for every DAG with queued assets, the scheduler locks the DAG's row (``FOR UPDATE SKIP
LOCKED`` on PostgreSQL: another scheduler holding it is skipped, never waited for), evaluates
the DAG's condition over what is queued, and when it holds creates one run and empties the
queue in the same transaction. A second scheduler that reads the DAG after that commit finds
the queue empty, so each run is created once.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from functools import partial
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from scheduler.partition_runs import ASSET_TRIGGERED, create_partition_runs
from state.core import DagModel, DagRun, DagRunState, session_scope, structure_of, utcnow
from state.engine import create_run, sync_watchers
from state.records import (
    OutletEvent,
    alias_resolutions,
    consume,
    dags_with_work,
    drop_keyed_events,
    queued_assets,
    sync_references,
)
from tradewind.assets import evaluate, references

log = logging.getLogger("tradewind.scheduler")


def sync_dag_assets(session: Session, dag_id: str, structure: Mapping[str, Any]) -> None:
    """Store what the DAG ``dag_id`` waits on, and the assets it names, at its sync.

    ``structure`` is the DAG's as its file's import built it (``tradewind/dag_processor.py``).
    """
    known = [
        OutletEvent(outlet["asset"], outlet.get("name"), outlet.get("group", "asset"))
        for task in structure["tasks"].values()
        for outlet in task["outlets"]
        if "asset" in outlet
    ]
    sync_references(session, dag_id, structure.get("asset_condition"), known)
    # The triggerer runs the watchers of the assets it is scheduled on (state/engine/watchers.py).
    sync_watchers(session, structure.get("asset_watchers") or [])


def create_asset_triggered_runs(url: str, now: dt.datetime | None = None) -> list[str]:
    """Create a run for each DAG whose asset condition holds over its queued updates (for a
    partitioned DAG, a run for each partition that is complete)."""
    with session_scope(url) as session:
        waiting = dags_with_work(session)
    created: list[str] = []
    for dag_id in waiting:
        with session_scope(url) as session:
            created += _create_if_due(session, dag_id, now or utcnow())
    return created


def _create_if_due(session: Session, dag_id: str, now: dt.datetime) -> list[str]:
    model = session.scalar(
        select(DagModel).where(DagModel.dag_id == dag_id).with_for_update(skip_locked=True)
    )
    if model is None or not model.is_active or model.is_paused:
        return []  # held by another scheduler, gone, or paused: its queue waits
    structure = structure_of(model)
    queued = queued_assets(session, dag_id)
    condition = structure.asset_condition
    if condition is not None and structure.partition_mappers is not None:
        active = _active_runs(session, dag_id)
        holds = partial(_holds, session, condition)
        return create_partition_runs(session, dag_id, structure, queued, holds, active, now)
    drop_keyed_events(session, dag_id)  # only a partitioned DAG maps them
    if condition is None:  # no longer scheduled on assets: nothing will consume its queue
        consume(session, dag_id, queued.values())
        return []
    if not queued or not _holds(session, condition, set(queued)):
        return []
    if _active_runs(session, dag_id) >= structure.max_active_runs:
        return []
    run = create_run(session, dag_id, run_type=ASSET_TRIGGERED, data_interval=(now, now))
    consume(session, dag_id, queued.values())
    log.info("created run %s of %s: its assets were updated", run.run_id, dag_id)
    return [run.run_id]


def _holds(session: Session, condition: Mapping[str, Any], updated: set[str]) -> bool:
    aliases = [ref.removeprefix("alias:") for ref in references(condition) if ref[:6] == "alias:"]
    return evaluate(condition, updated, alias_resolutions(session, aliases))


def _active_runs(session: Session, dag_id: str) -> int:
    active = (DagRunState.QUEUED, DagRunState.RUNNING)
    query = select(func.count()).where(DagRun.dag_id == dag_id, DagRun.state.in_(active))
    return int(session.scalar(query) or 0)
