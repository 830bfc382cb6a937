"""DAGs and their tasks, as Airflow's ``DAGResponse``, ``DAGDetailsResponse``, ``TaskResponse``."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict

from api.structure import DagStructure, TaskSpec, is_mapped, owners, params_described
from state.core import DagModel


class DagTagResponse(BaseModel):
    name: str
    dag_id: str
    dag_display_name: str


class DAGResponse(BaseModel):
    dag_id: str
    dag_display_name: str
    is_paused: bool
    is_stale: bool
    last_parsed_time: dt.datetime | None
    last_parse_duration: float | None = None
    last_expired: dt.datetime | None = None
    bundle_name: str | None = None
    bundle_version: str | None = None
    relative_fileloc: str | None
    fileloc: str
    description: str | None
    timetable_summary: str | None
    timetable_description: str | None
    timetable_partitioned: bool = False
    timetable_periodic: bool
    tags: list[DagTagResponse]
    max_active_tasks: int
    max_active_runs: int | None
    max_consecutive_failed_dag_runs: int = 0
    has_task_concurrency_limits: bool = False
    has_import_errors: bool
    next_dagrun_logical_date: dt.datetime | None
    next_dagrun_data_interval_start: dt.datetime | None = None
    next_dagrun_data_interval_end: dt.datetime | None = None
    next_dagrun_run_after: dt.datetime | None
    allowed_run_types: list[str] | None = None
    owners: list[str]
    is_backfillable: bool = False
    file_token: str


class DAGCollectionResponse(BaseModel):
    dags: list[DAGResponse]
    total_entries: int


class DAGPatchBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    is_paused: bool


class DagVersionResponse(BaseModel):
    id: uuid.UUID
    version_number: int
    dag_id: str
    bundle_name: str | None = None
    bundle_version: str | None = None
    created_at: dt.datetime
    dag_display_name: str
    bundle_url: str | None = None


class DAGDetailsResponse(DAGResponse):
    catchup: bool
    dag_run_timeout: dt.timedelta | None = None
    asset_expression: dict[str, Any] | None = None
    doc_md: str | None
    start_date: dt.datetime | None
    end_date: dt.datetime | None = None
    is_paused_upon_creation: bool | None = None
    params: dict[str, Any] | None
    render_template_as_native_obj: bool = False
    template_search_path: list[str] | None = None
    timezone: str | None = "UTC"
    last_parsed: dt.datetime | None
    default_args: dict[str, Any] | None = None
    rerun_with_latest_version: bool | None = None
    owner_links: dict[str, str] | None = None
    is_favorite: bool = False
    active_runs_count: int = 0
    concurrency: int
    latest_dag_version: DagVersionResponse | None


def dag_version(model: DagModel) -> DagVersionResponse:
    """The DAG's current version: Tradewind keeps one, named by its structure's hash."""
    return DagVersionResponse(
        id=uuid.UUID(model.version_hash[:32]),
        version_number=1,
        dag_id=model.dag_id,
        bundle_version=model.version_hash,
        created_at=model.last_parsed_at,
        dag_display_name=model.dag_id,
    )


def _dag_fields(model: DagModel, view: DagStructure, has_import_errors: bool) -> dict[str, Any]:
    return {
        "dag_id": model.dag_id,
        "dag_display_name": view.display_name or model.dag_id,
        "is_paused": model.is_paused,
        "is_stale": not model.is_active,
        "last_parsed_time": model.last_parsed_at,
        "relative_fileloc": model.fileloc.rsplit("/", 1)[-1],
        "fileloc": model.fileloc,
        "description": view.description,
        **_timetable_fields(view),
        "timetable_partitioned": view.partition_mappers is not None,
        "tags": [
            DagTagResponse(name=tag, dag_id=model.dag_id, dag_display_name=model.dag_id)
            for tag in view.tags
        ],
        "max_active_tasks": view.max_active_tasks,
        "max_active_runs": view.max_active_runs,
        "has_import_errors": has_import_errors,
        "next_dagrun_logical_date": model.next_dagrun_after,
        "next_dagrun_run_after": model.next_dagrun_after,
        "owners": owners(view),
        "file_token": model.dag_id,
    }


def dag_response(model: DagModel, view: DagStructure, has_import_errors: bool) -> DAGResponse:
    return DAGResponse(**_dag_fields(model, view, has_import_errors))


def dag_details(
    model: DagModel, view: DagStructure, has_import_errors: bool, active_runs: int
) -> DAGDetailsResponse:
    start = dt.datetime.fromisoformat(view.start_date) if view.start_date else None
    return DAGDetailsResponse(
        **_dag_fields(model, view, has_import_errors),
        catchup=view.catchup,
        doc_md=view.doc_md,
        start_date=start,
        end_date=_date(view.end_date),
        dag_run_timeout=(
            dt.timedelta(seconds=view.dagrun_timeout_seconds)
            if view.dagrun_timeout_seconds is not None
            else None
        ),
        params=params_described(model),
        last_parsed=model.last_parsed_at,
        active_runs_count=active_runs,
        concurrency=view.max_active_tasks,
        latest_dag_version=dag_version(model),
    )


def _date(text: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(text) if text else None


def time_delta(seconds: float | None) -> dict[str, Any] | None:
    """A duration as Airflow serializes one (its ``TimeDelta``)."""
    if seconds is None:
        return None
    delta = dt.timedelta(seconds=seconds)
    return {
        "__type": "TimeDelta",
        "days": delta.days,
        "seconds": delta.seconds,
        "microseconds": delta.microseconds,
    }


class TaskResponse(BaseModel):
    task_id: str | None
    task_display_name: str | None
    owner: str | None = None
    start_date: dt.datetime | None = None
    end_date: dt.datetime | None = None
    trigger_rule: str | None
    depends_on_past: bool = False
    wait_for_downstream: bool = False
    retries: float | None
    queue: str | None
    pool: str | None
    pool_slots: float | None = 1
    execution_timeout: dict[str, Any] | None
    retry_delay: dict[str, Any] | None
    retry_exponential_backoff: float = 0
    priority_weight: float | None = 1
    weight_rule: str | None = "downstream"
    ui_color: str | None = None
    ui_fgcolor: str | None = None
    template_fields: list[str] | None = None
    downstream_task_ids: list[str] | None
    doc_md: str | None = None
    operator_name: str | None
    params: dict[str, Any] | None = None
    class_ref: dict[str, Any] | None = None
    is_mapped: bool | None
    extra_links: list[str] = []


class TaskCollectionResponse(BaseModel):
    tasks: list[TaskResponse]
    total_entries: int


def task_response(task_id: str, task: TaskSpec) -> TaskResponse:
    return TaskResponse(
        task_id=task_id,
        task_display_name=task_id,
        trigger_rule=task.trigger_rule,
        depends_on_past=task.depends_on_past,
        wait_for_downstream=task.wait_for_downstream,
        end_date=_date(task.end_date),
        retries=task.retries,
        queue=task.queue,
        pool=task.pool,
        execution_timeout=time_delta(task.execution_timeout_seconds),
        retry_delay=time_delta(task.retry_delay_seconds),
        downstream_task_ids=list(task.downstream),
        doc_md=task.doc_md,
        operator_name="@task.runtime" if task.runtime else "@task",
        is_mapped=is_mapped(task),
    )


def _timetable_fields(view: DagStructure) -> dict[str, Any]:
    """What Airflow's API says of a DAG's timetable: a timetable object's stored ``display``,
    else the schedule text."""
    if view.timetable is not None:
        display = view.timetable.get("display", {})
        return {
            f"timetable_{key}": display.get(key) for key in ("summary", "description", "periodic")
        }
    return {
        "timetable_summary": view.schedule,
        "timetable_description": view.schedule,
        "timetable_periodic": view.schedule is not None,
    }
