"""The task's channel: what a task process and its supervisor say to each other during a try.

Rules, and why:
- One stream socket per try, carrying length-prefixed frames (``framing.py``): a Python task
  process gets it with its start (``warm.py``), a runtime task inherits it across exec, and a
  client in any language can speak it.
- The task only asks. Every request carries an ``id``; the supervisor sends exactly one reply
  with the same ``id`` (a ``...Result``, ``OKResponse`` or ``ErrorResponse``). The task never has
  to handle a message it did not ask for, so a client is a loop of send-then-read.
- Requests are verb + noun (``GetXCom``, ``SucceedTask``); replies are noun + ``Result``, plus
  ``OKResponse`` and ``ErrorResponse``. Each direction is one union decoded by one
  ``TypeAdapter``: a frame costs one validation, on the hot path of every try.
- The first request is ``GetTaskDetails`` with ``PROTOCOL_VERSION``; a supervisor that speaks
  another version answers ``ErrorResponse`` and the task exits. No versioned schemas: both ends
  ship together, and the version only catches a runtime client written for another release.
- Logs do not travel here: the task's stdout and stderr are pipes of their own, so a chatty task
  can never delay a reply, and a task that dies mid-frame loses no log line.

The backend helper's look-ups (``GetConnection``, ``GetVariable``, ``MaskSecret``) and the
replies they get are this channel's classes, reused by ``helper.py``; ``ErrorResponse`` is also
the fork server's report of a failed fork.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter

from worker.wire.framing import Message

PROTOCOL_VERSION = 1


# --- requests: task -> supervisor (verb + noun) -------------------------------------------


class GetTaskDetails(Message):
    type: Literal["GetTaskDetails"] = "GetTaskDetails"
    protocol_version: int


class GetXCom(Message):
    type: Literal["GetXCom"] = "GetXCom"
    task_id: str
    key: str = "return_value"
    map_index: int | None = None


class SetXCom(Message):
    type: Literal["SetXCom"] = "SetXCom"
    key: str
    value: Any


class GetStateValue(Message):
    type: Literal["GetStateValue"] = "GetStateValue"
    key: str


class SetStateValue(Message):
    type: Literal["SetStateValue"] = "SetStateValue"
    key: str
    value: Any
    expires_at: dt.datetime | None = None


class DeleteStateValue(Message):
    type: Literal["DeleteStateValue"] = "DeleteStateValue"
    key: str


class ClearStateValues(Message):
    type: Literal["ClearStateValues"] = "ClearStateValues"
    # An item of an iterable task clears only its own keys: those ending with its suffix.
    key_suffix: str = ""


# Checkpoints of iterable tasks (DESIGN.md §5): the supervisor stores and reads them; what they
# mean is the task's business (worker/task_runner/checkpoints.py).
class WriteCheckpointBatch(Message):
    type: Literal["WriteCheckpointBatch"] = "WriteCheckpointBatch"
    number: int = Field(ge=0)
    value: Any


class WriteCheckpointMarker(Message):
    type: Literal["WriteCheckpointMarker"] = "WriteCheckpointMarker"
    value: Any


class ReadCheckpointBatches(Message):
    type: Literal["ReadCheckpointBatches"] = "ReadCheckpointBatches"


class ClearCheckpointBatches(Message):
    type: Literal["ClearCheckpointBatches"] = "ClearCheckpointBatches"


class SetItemsTotal(Message):
    type: Literal["SetItemsTotal"] = "SetItemsTotal"
    total: int = Field(ge=0)


class MaskSecret(Message):
    type: Literal["MaskSecret"] = "MaskSecret"
    value: str


class GetConnection(Message):
    type: Literal["GetConnection"] = "GetConnection"
    conn_id: str


class GetVariable(Message):
    type: Literal["GetVariable"] = "GetVariable"
    key: str


class GetAssetEvents(Message):
    type: Literal["GetAssetEvents"] = "GetAssetEvents"
    # An asset's URI, or ``alias:<name>`` for the events recorded through an alias.
    uri: str


class GetRunFacts(Message):
    """What the context reads of other rows, asked once, when a task first reads one of
    ``prev_*_success``, ``expanded_ti_count`` or ``triggering_asset_events``."""

    type: Literal["GetRunFacts"] = "GetRunFacts"


class SetRenderedMapIndex(Message):
    """A mapped task instance's name: its ``map_index_template`` rendered after the try."""

    type: Literal["SetRenderedMapIndex"] = "SetRenderedMapIndex"
    rendered_map_index: str


class GetAssetStateValue(Message):
    type: Literal["GetAssetStateValue"] = "GetAssetStateValue"
    uri: str
    key: str


class SetAssetStateValue(Message):
    type: Literal["SetAssetStateValue"] = "SetAssetStateValue"
    uri: str
    key: str
    value: Any = None


class DeleteAssetStateValue(Message):
    type: Literal["DeleteAssetStateValue"] = "DeleteAssetStateValue"
    uri: str
    # None: every key of the asset's state.
    key: str | None = None


# Cross-DAG requests of the standard provider's operators (tradewind/standard/): the task
# never reads another DAG's rows itself, it asks.
class TriggerDagRun(Message):
    """Create a run of ``dag_id`` as ``tradewind dags trigger`` does (its conf checked)."""

    type: Literal["TriggerDagRun"] = "TriggerDagRun"
    dag_id: str
    run_id: str
    conf: dict[str, Any] = Field(default_factory=dict)
    logical_date: dt.datetime | None = None
    # The run exists already: clear it to run again, instead of answering ``exists``.
    reset_dag_run: bool = False


class GetDagRunState(Message):
    type: Literal["GetDagRunState"] = "GetDagRunState"
    dag_id: str
    run_id: str


class GetDagRunStates(Message):
    """The states of ``dag_id``'s runs at these logical dates (an ``ExternalTaskSensor``)."""

    type: Literal["GetDagRunStates"] = "GetDagRunStates"
    dag_id: str
    logical_dates: list[dt.datetime]


class GetTaskInstanceStates(Message):
    """The states of some task instances of ``dag_id``'s runs at these logical dates: those of
    ``task_ids``, or of the tasks inside ``task_group_id``."""

    type: Literal["GetTaskInstanceStates"] = "GetTaskInstanceStates"
    dag_id: str
    logical_dates: list[dt.datetime]
    task_ids: list[str] | None = None
    task_group_id: str | None = None


class GetDagTasks(Message):
    """Whether ``dag_id`` is known, and its task and group ids (``check_existence``)."""

    type: Literal["GetDagTasks"] = "GetDagTasks"
    dag_id: str


class SucceedTask(Message):
    type: Literal["SucceedTask"] = "SucceedTask"
    # What the task set on its outlets (tradewind/asset_events.py): extras, alias resolutions.
    asset_events: list[dict[str, Any]] = Field(default_factory=list)
    # A branch's or short circuit's choice: the task or group ids to follow ([]: none). The
    # store skips the others with the end (state.engine.end_plan.SkipDownstream).
    follow: list[str] | None = None


class FailTask(Message):
    type: Literal["FailTask"] = "FailTask"
    error: str
    retryable: bool = True
    # Set by the task's retry policy: the wait before the next try, instead of retry_delay.
    retry_delay_seconds: float | None = None


class SkipTask(Message):
    type: Literal["SkipTask"] = "SkipTask"
    reason: str = ""


class RescheduleTask(Message):
    """A sensor in reschedule mode not done yet: end the try, poke again at ``reschedule_date``."""

    type: Literal["RescheduleTask"] = "RescheduleTask"
    reschedule_date: dt.datetime


class DeferTask(Message):
    """The task deferred (DESIGN.md §12): end the try as ``deferred``; it resumes in
    ``method_name`` once the trigger ``classpath(**trigger_kwargs)`` fires, or fails after
    ``timeout_seconds``."""

    type: Literal["DeferTask"] = "DeferTask"
    classpath: str
    trigger_kwargs: dict[str, Any] = Field(default_factory=dict)
    method_name: str
    method_kwargs: dict[str, Any] = Field(default_factory=dict)
    timeout_seconds: float | None = None


class AwaitInput(Message):
    """A human-in-the-loop task asked a person (docs/hitl.md): end the try as
    ``awaiting_input`` with ``question``; it resumes in ``method_name`` with the answer, or with
    the question's defaults after ``timeout_seconds``."""

    type: Literal["AwaitInput"] = "AwaitInput"
    method_name: str
    question: dict[str, Any] = Field(default_factory=dict)
    timeout_seconds: float | None = None


# --- replies: supervisor -> task (noun + Result) ------------------------------------------


class TaskDetails(Message):
    type: Literal["TaskDetails"] = "TaskDetails"
    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    try_number: int
    max_tries: int
    generation: int
    params: dict[str, Any]
    run_type: str
    # The trigger's conf alone (``params`` has it merged over the DAG's params): ``dag_run.conf``.
    conf: dict[str, Any] = Field(default_factory=dict)
    logical_date: dt.datetime | None = None
    data_interval_start: dt.datetime | None = None
    data_interval_end: dt.datetime | None = None
    # A partitioned DAG's run: the partition it is (``dag_run.partition_key``).
    partition_key: str | None = None
    partition_date: dt.datetime | None = None
    # Upstream XComs already resolved, for runtime tasks that do not parse the DAG.
    arguments: dict[str, Any] = Field(default_factory=dict)
    # A deferred try resuming (DESIGN.md §12): the method to call, with these keyword
    # arguments (the trigger's event under ``event``).
    next_method: str | None = None
    next_kwargs: dict[str, Any] | None = None


class XComResult(Message):
    type: Literal["XComResult"] = "XComResult"
    found: bool
    value: Any = None
    # Set when ``value`` is the list of a mapped task's XComs: the map index of each item.
    map_indexes: list[int] | None = None


class StateValueResult(Message):
    type: Literal["StateValueResult"] = "StateValueResult"
    found: bool
    value: Any = None


class CheckpointBatchesResult(Message):
    type: Literal["CheckpointBatchesResult"] = "CheckpointBatchesResult"
    batches: dict[int, Any] = Field(default_factory=dict)
    marker: Any = None


class ConnectionResult(Message):
    # "schema" on the wire; the attribute is renamed because pydantic's BaseModel has a .schema.
    model_config = ConfigDict(extra="forbid", serialize_by_alias=True, validate_by_name=True)

    type: Literal["ConnectionResult"] = "ConnectionResult"
    conn_id: str
    conn_type: str = "generic"
    host: str | None = None
    login: str | None = None
    password: str | None = None
    schema_: str | None = Field(default=None, alias="schema")
    port: int | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class VariableResult(Message):
    type: Literal["VariableResult"] = "VariableResult"
    key: str
    found: bool
    value: str | None = None


class AssetEventsResult(Message):
    type: Literal["AssetEventsResult"] = "AssetEventsResult"
    events: list[dict[str, Any]] = Field(default_factory=list)


class TriggerDagRunResult(Message):
    type: Literal["TriggerDagRunResult"] = "TriggerDagRunResult"
    run_id: str
    # "created"; "cleared" (it existed, reset_dag_run); "exists" (it existed, left alone).
    outcome: Literal["created", "cleared", "exists"]


class DagRunStateResult(Message):
    type: Literal["DagRunStateResult"] = "DagRunStateResult"
    # None: no such run.
    state: str | None = None


class DagRunStatesResult(Message):
    type: Literal["DagRunStatesResult"] = "DagRunStatesResult"
    states: list[str] = Field(default_factory=list)


class TaskInstanceStatesResult(Message):
    type: Literal["TaskInstanceStatesResult"] = "TaskInstanceStatesResult"
    # (run_id, task_id, map_index, state) per task instance found.
    task_instances: list[tuple[str, str, int, str]] = Field(default_factory=list)


class DagTasksResult(Message):
    type: Literal["DagTasksResult"] = "DagTasksResult"
    found: bool
    task_ids: list[str] = Field(default_factory=list)
    group_ids: list[str] = Field(default_factory=list)
    is_paused: bool = False


class RunFactsResult(Message):
    type: Literal["RunFactsResult"] = "RunFactsResult"
    # The previous successful run's dates (ISO strings), None when there is none.
    prev_success: dict[str, str | None] | None = None
    expanded_ti_count: int | None = None
    triggering_asset_events: list[dict[str, Any]] = Field(default_factory=list)


class OKResponse(Message):
    type: Literal["OKResponse"] = "OKResponse"


class ErrorResponse(Message):
    type: Literal["ErrorResponse"] = "ErrorResponse"
    error: str


ToSupervisor = Annotated[
    GetTaskDetails
    | GetXCom
    | SetXCom
    | GetStateValue
    | SetStateValue
    | DeleteStateValue
    | ClearStateValues
    | WriteCheckpointBatch
    | WriteCheckpointMarker
    | ReadCheckpointBatches
    | ClearCheckpointBatches
    | SetItemsTotal
    | MaskSecret
    | GetConnection
    | GetVariable
    | GetAssetEvents
    | GetRunFacts
    | SetRenderedMapIndex
    | GetAssetStateValue
    | SetAssetStateValue
    | DeleteAssetStateValue
    | TriggerDagRun
    | GetDagRunState
    | GetDagRunStates
    | GetTaskInstanceStates
    | GetDagTasks
    | SucceedTask
    | FailTask
    | SkipTask
    | RescheduleTask
    | DeferTask
    | AwaitInput,
    Field(discriminator="type"),
]
ToTask = Annotated[
    TaskDetails
    | XComResult
    | StateValueResult
    | CheckpointBatchesResult
    | ConnectionResult
    | VariableResult
    | AssetEventsResult
    | TriggerDagRunResult
    | DagRunStateResult
    | DagRunStatesResult
    | TaskInstanceStatesResult
    | DagTasksResult
    | RunFactsResult
    | OKResponse
    | ErrorResponse,
    Field(discriminator="type"),
]
TO_SUPERVISOR: TypeAdapter[ToSupervisor] = TypeAdapter(ToSupervisor)
# Decoded in the task process, where pydantic's process-wide string cache is the parent's pages:
# caching every string (the default) cost ~50 copy-on-write faults (~0.2 ms) per task process;
# caching keys only measured the same as no cache, and still shares a large reply's keys.
TO_TASK: TypeAdapter[ToTask] = TypeAdapter(ToTask, config=ConfigDict(cache_strings="keys"))
