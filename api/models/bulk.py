"""The bodies and answer of Airflow's bulk routes for task instances and DAG runs.

A bulk body is a list of actions (``create``, ``update``, ``delete``), each on a list of
entities; the answer names, per action, the keys that succeeded and the errors met, so one bad
entity does not stop the others.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from api.models.task_instances import MarkableState


class BulkActionResponse(BaseModel):
    success: list[str] = Field(default_factory=list)
    errors: list[dict[str, Any]] = Field(default_factory=list)


class BulkResponse(BaseModel):
    create: BulkActionResponse | None = None
    update: BulkActionResponse | None = None
    delete: BulkActionResponse | None = None


class BulkTaskInstanceBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    new_state: MarkableState | None = None
    note: str | None = Field(default=None, max_length=1000)
    include_upstream: bool = False
    include_downstream: bool = False
    include_future: bool = False
    include_past: bool = False
    task_id: str
    map_index: int | None = None
    dag_id: str | None = None
    dag_run_id: str | None = None


class BulkDAGRunBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dag_run_id: str
    dag_id: str | None = None
    state: Literal["queued", "success", "failed"] | None = None
    note: str | None = Field(default=None, max_length=1000)


OnExistence = Literal["fail", "skip", "overwrite"]
OnNonExistence = Literal["fail", "skip"]


class _Create(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: Literal["create"]
    action_on_existence: OnExistence = "fail"


class _Update(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: Literal["update"]
    update_mask: list[str] | None = None
    action_on_non_existence: OnNonExistence = "fail"


class _Delete(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: Literal["delete"]
    action_on_non_existence: OnNonExistence = "fail"


class BulkCreateTaskInstances(_Create):
    entities: list[BulkTaskInstanceBody]


class BulkUpdateTaskInstances(_Update):
    entities: list[BulkTaskInstanceBody]


class BulkDeleteTaskInstances(_Delete):
    entities: list[str | BulkTaskInstanceBody]


class BulkTaskInstancesBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    actions: list[
        Annotated[
            BulkCreateTaskInstances | BulkUpdateTaskInstances | BulkDeleteTaskInstances,
            Field(discriminator="action"),
        ]
    ]


class BulkCreateDagRuns(_Create):
    entities: list[BulkDAGRunBody]


class BulkUpdateDagRuns(_Update):
    entities: list[BulkDAGRunBody]


class BulkDeleteDagRuns(_Delete):
    entities: list[str | BulkDAGRunBody]


class BulkDagRunsBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    actions: list[
        Annotated[
            BulkCreateDagRuns | BulkUpdateDagRuns | BulkDeleteDagRuns,
            Field(discriminator="action"),
        ]
    ]


class BulkDAGRunClearBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    partition_key: str | None = None
    partition_date_start: dt.datetime | None = None
    partition_date_end: dt.datetime | None = None
    dry_run: bool = True
    only_failed: bool = False
    only_new: bool = False
    run_on_latest_version: bool | None = None
    note: str | None = Field(default=None, max_length=1000)
    dag_runs: list[BulkDAGRunBody] = Field(default_factory=list)
