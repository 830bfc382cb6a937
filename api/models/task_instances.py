"""Task instances, their tries, logs and dependencies, as Airflow's models name them.

Airflow's ``TaskInstanceState`` has no ``none``: a task instance not yet scheduled has the state
``null``, and so it has here.
"""

from __future__ import annotations

import datetime as dt
import getpass
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from state.core import TaskInstance, TaskInstanceState
from state.records import MAX_NOTE_CHARS, TryView
from state.views import TIRow

#: The unix user the fleet's tasks run as: whoever runs the server, as in a standalone.
_UNIXNAME = getpass.getuser()


class _TryFields(BaseModel):
    """The fields a task instance and one of its tries share (two schemas in Airflow's API)."""

    task_id: str
    dag_id: str
    dag_run_id: str
    map_index: int
    start_date: dt.datetime | None
    end_date: dt.datetime | None
    duration: float | None
    state: str | None
    try_number: int
    max_tries: int
    task_display_name: str
    dag_display_name: str
    hostname: str | None
    unixname: str | None
    pool: str
    pool_slots: int = 1
    queue: str | None
    priority_weight: int | None = 1
    operator: str | None = None
    operator_name: str | None = None
    queued_when: dt.datetime | None
    scheduled_when: dt.datetime | None = None
    pid: int | None
    executor: str | None = "CeleryExecutor"
    executor_config: str = "{}"
    dag_version: dict[str, Any] | None = None


class TaskInstanceResponse(_TryFields):
    id: uuid.UUID
    logical_date: dt.datetime | None
    run_after: dt.datetime
    note: str | None = None
    rendered_map_index: str | None
    rendered_fields: dict[str, Any] = Field(default_factory=dict)  # no deepcopy per row
    trigger: dict[str, Any] | None = None
    triggerer_job: dict[str, Any] | None = None


class TaskInstanceCollectionResponse(BaseModel):
    task_instances: list[TaskInstanceResponse]
    total_entries: int | None


class TaskInstanceHistoryResponse(_TryFields):
    pass


class TaskInstanceHistoryCollectionResponse(BaseModel):
    task_instances: list[TaskInstanceHistoryResponse]
    total_entries: int


class StructuredLogMessage(BaseModel):
    """One log line, as Airflow 3's structured log items (``api/log_lines.py``)."""

    model_config = ConfigDict(extra="allow")

    timestamp: dt.datetime | None = None
    event: str
    level: str | None = None
    logger: str | None = None
    source: str | None = None


class TaskInstancesLogResponse(BaseModel):
    content: list[StructuredLogMessage] | list[str]
    continuation_token: str | None = None


class TaskDependencyResponse(BaseModel):
    name: str
    reason: str


class TaskDependencyCollectionResponse(BaseModel):
    dependencies: list[TaskDependencyResponse]


MarkableState = Literal["success", "failed", "skipped"]


class PatchTaskInstanceBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    new_state: MarkableState | None = None
    note: str | None = Field(default=None, max_length=MAX_NOTE_CHARS)
    include_upstream: bool = False
    include_downstream: bool = False
    include_future: bool = False
    include_past: bool = False


class ClearTaskInstancesBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dry_run: bool = True
    start_date: dt.datetime | None = None
    end_date: dt.datetime | None = None
    only_failed: bool = True
    only_running: bool = False
    reset_dag_runs: bool = True
    task_ids: list[str | tuple[str, int]] | None = None
    dag_run_id: str | None = None
    include_upstream: bool = False
    include_downstream: bool = False
    include_future: bool = False
    include_past: bool = False
    run_on_latest_version: bool | None = None
    prevent_running_task: bool = False
    note: str | None = None


def api_state(state: str) -> str | None:
    return None if state == TaskInstanceState.NONE else str(state)


def ti_uuid(ti_id: int) -> uuid.UUID:
    """The task instance's id as the UUID Airflow's API uses (its integer key inside)."""
    return uuid.UUID(int=ti_id)


def _timing(ti: TaskInstance) -> dict[str, Any]:
    duration = None
    if ti.start_date and ti.end_date:
        duration = (ti.end_date - ti.start_date).total_seconds()
    return {"start_date": ti.start_date, "end_date": ti.end_date, "duration": duration}


def _common(ti: TaskInstance) -> dict[str, Any]:
    return {
        "task_id": ti.task_id,
        "dag_id": ti.dag_id,
        "dag_run_id": ti.run_id,
        "map_index": ti.map_index,
        **_timing(ti),
        "state": api_state(ti.state),
        "try_number": ti.try_number,
        "max_tries": ti.max_tries,
        "task_display_name": ti.task_id,
        "dag_display_name": ti.dag_id,
        "hostname": ti.hostname,
        "unixname": _UNIXNAME,
        "pool": ti.pool,
        "queue": ti.queue,
        "queued_when": ti.queued_at,
        "pid": ti.pid,
    }


def ti_response(row: TIRow) -> TaskInstanceResponse:
    ti = row.ti
    return TaskInstanceResponse(
        id=ti_uuid(ti.id),
        **_common(ti),
        note=ti.note,
        logical_date=row.logical_date,
        run_after=row.run_after,
        rendered_map_index=_name_of_index(ti),
    )


def _name_of_index(ti: TaskInstance) -> str | None:
    """A mapped instance's ``map_index_template`` as rendered, else its index (Airflow's)."""
    if ti.map_index < 0:
        return None
    return ti.rendered_map_index or str(ti.map_index)


def try_response(ti: TaskInstance, one_try: TryView) -> TaskInstanceHistoryResponse:
    """One try of ``ti``, as kept (``state.records.tries_of``)."""
    return TaskInstanceHistoryResponse(
        **{
            **_common(ti),
            "start_date": one_try.start_date,
            "end_date": one_try.end_date,
            "duration": one_try.duration,
            "state": one_try.state if one_try.state != TaskInstanceState.NONE else None,
            "try_number": one_try.try_number,
            "max_tries": one_try.max_tries,
            "hostname": one_try.hostname,
            "pid": one_try.pid,
            "queued_when": one_try.queued_at,
            "pool": one_try.pool,
            "pool_slots": one_try.pool_slots,
            "queue": one_try.queue,
            "priority_weight": one_try.priority_weight,
        }
    )
