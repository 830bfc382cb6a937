"""DAG runs, as Airflow's ``DAGRunResponse`` and the bodies that trigger, patch and clear them."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from api.models.dags import DagVersionResponse
from state.core import DagRun
from state.records import MAX_NOTE_CHARS

#: Airflow's run types; Tradewind's ``test`` runs (``tradewind dags test``) show as manual.
_RUN_TYPES = {"manual", "scheduled", "backfill", "asset_triggered"}


class DAGRunResponse(BaseModel):
    dag_run_id: str
    dag_id: str
    logical_date: dt.datetime | None
    queued_at: dt.datetime | None
    start_date: dt.datetime | None
    end_date: dt.datetime | None
    duration: float | None
    data_interval_start: dt.datetime | None
    data_interval_end: dt.datetime | None
    run_after: dt.datetime
    last_scheduling_decision: dt.datetime | None = None
    run_type: str
    state: Literal["queued", "running", "success", "failed"]
    triggered_by: str | None
    triggering_user_name: str | None = None
    conf: dict[str, Any] | None
    note: str | None = None
    dag_versions: list[DagVersionResponse] = []
    bundle_version: str | None
    dag_display_name: str
    partition_key: str | None = None
    partition_date: dt.datetime | None = None


class DAGRunCollectionResponse(BaseModel):
    dag_runs: list[DAGRunResponse]
    total_entries: int | None


class TriggerDAGRunPostBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dag_run_id: str | None = None
    data_interval_start: dt.datetime | None = None
    data_interval_end: dt.datetime | None = None
    logical_date: dt.datetime | None = None
    run_after: dt.datetime | None = None
    conf: dict[str, Any] | None = None
    note: str | None = Field(default=None, max_length=MAX_NOTE_CHARS)
    partition_key: str | None = None


class DAGRunPatchBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    state: Literal["queued", "success", "failed"] | None = None
    note: str | None = Field(default=None, max_length=MAX_NOTE_CHARS)


class DAGRunClearBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dry_run: bool = True
    only_failed: bool = False
    only_new: bool = False
    run_on_latest_version: bool | None = None
    note: str | None = None


def _duration(run: DagRun) -> float | None:
    if run.start_date and run.end_date:
        return (run.end_date - run.start_date).total_seconds()
    return None


#: What a run made before runs said how they were triggered says (its type's usual way in).
_TRIGGERED_BY_TYPE = {
    "test": "test",
    "scheduled": "timetable",
    "asset_triggered": "asset",
    "backfill": "backfill",
}
_TRIGGERED_BY = {"cli", "operator", "rest_api", "ui", "test", "timetable", "asset", "backfill"}


def _triggered_by(run: DagRun) -> str | None:
    if run.triggered_by in _TRIGGERED_BY:
        return run.triggered_by
    return _TRIGGERED_BY_TYPE.get(run.run_type)


def dag_run_response(run: DagRun) -> DAGRunResponse:
    return DAGRunResponse(
        dag_run_id=run.run_id,
        dag_id=run.dag_id,
        logical_date=run.logical_date,
        queued_at=run.created_at,
        start_date=run.start_date,
        end_date=run.end_date,
        duration=_duration(run),
        data_interval_start=run.data_interval_start,
        data_interval_end=run.data_interval_end,
        run_after=run.created_at,
        run_type=run.run_type if run.run_type in _RUN_TYPES else "manual",
        state=run.state,  # type: ignore[arg-type]
        triggered_by=_triggered_by(run),
        triggering_user_name=run.triggering_user_name,
        conf=run.conf,
        note=run.note,
        bundle_version=run.version_hash,
        dag_display_name=run.dag_id,
        partition_key=run.partition_key,
        partition_date=run.partition_date,
    )
