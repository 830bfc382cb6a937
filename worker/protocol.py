"""The wire between a supervisor and its task process: every message, and how frames are made.

Channel rules, and why:
- One stream socket per task process, inherited across fork/exec. Each frame is a 4-byte
  big-endian length, then that many bytes of UTF-8 JSON: a reader always knows where a message
  ends, whatever language wrote it.
- The task only asks. Every request carries an ``id``; the supervisor sends exactly one reply
  with the same ``id`` (a ``...Result``, ``OKResponse`` or ``ErrorResponse``). The task never has
  to handle a message it did not ask for, so a client is a loop of send-then-read.
- The first request is ``GetTaskDetails`` with ``PROTOCOL_VERSION``; a supervisor that speaks
  another version answers ``ErrorResponse`` and the task exits.
- Logs do not travel here: the task's stdout and stderr are pipes of their own, so a chatty task
  can never delay a reply, and a task that dies mid-frame loses no log line.
"""

from __future__ import annotations

import datetime as dt
import socket
import struct
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

PROTOCOL_VERSION = 1
MAX_FRAME_BYTES = 1 << 30
_HEADER = struct.Struct(">I")


class ProtocolError(RuntimeError):
    """A frame that cannot be read: truncated, oversized, or not a known message."""


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: int = 0


# --- requests: task -> supervisor (verb + noun) -------------------------------------------


class GetTaskDetails(_Message):
    type: Literal["GetTaskDetails"] = "GetTaskDetails"
    protocol_version: int


class GetXCom(_Message):
    type: Literal["GetXCom"] = "GetXCom"
    task_id: str
    key: str = "return_value"
    map_index: int | None = None


class SetXCom(_Message):
    type: Literal["SetXCom"] = "SetXCom"
    key: str
    value: Any


class GetStateValue(_Message):
    type: Literal["GetStateValue"] = "GetStateValue"
    key: str


class SetStateValue(_Message):
    type: Literal["SetStateValue"] = "SetStateValue"
    key: str
    value: Any
    expires_at: dt.datetime | None = None


class DeleteStateValue(_Message):
    type: Literal["DeleteStateValue"] = "DeleteStateValue"
    key: str


class ClearStateValues(_Message):
    type: Literal["ClearStateValues"] = "ClearStateValues"
    # An item of an iterable task clears only its own keys: those ending with its suffix.
    key_suffix: str = ""


# Checkpoints of iterable tasks (DESIGN.md §5): the supervisor stores and reads them; what they
# mean is the task's business (worker/task_runner/checkpoints.py).
class WriteCheckpointBatch(_Message):
    type: Literal["WriteCheckpointBatch"] = "WriteCheckpointBatch"
    number: int = Field(ge=0)
    value: Any


class WriteCheckpointMarker(_Message):
    type: Literal["WriteCheckpointMarker"] = "WriteCheckpointMarker"
    value: Any


class ReadCheckpointBatches(_Message):
    type: Literal["ReadCheckpointBatches"] = "ReadCheckpointBatches"


class ClearCheckpointBatches(_Message):
    type: Literal["ClearCheckpointBatches"] = "ClearCheckpointBatches"


class SetItemsTotal(_Message):
    type: Literal["SetItemsTotal"] = "SetItemsTotal"
    total: int = Field(ge=0)


class MaskSecret(_Message):
    type: Literal["MaskSecret"] = "MaskSecret"
    value: str


class GetConnection(_Message):
    type: Literal["GetConnection"] = "GetConnection"
    conn_id: str


class GetVariable(_Message):
    type: Literal["GetVariable"] = "GetVariable"
    key: str


class GetAssetEvents(_Message):
    type: Literal["GetAssetEvents"] = "GetAssetEvents"
    # An asset's URI, or ``alias:<name>`` for the events recorded through an alias.
    uri: str


class GetAssetStateValue(_Message):
    type: Literal["GetAssetStateValue"] = "GetAssetStateValue"
    uri: str
    key: str


class SetAssetStateValue(_Message):
    type: Literal["SetAssetStateValue"] = "SetAssetStateValue"
    uri: str
    key: str
    value: Any = None


class DeleteAssetStateValue(_Message):
    type: Literal["DeleteAssetStateValue"] = "DeleteAssetStateValue"
    uri: str
    # None: every key of the asset's state.
    key: str | None = None


class SucceedTask(_Message):
    type: Literal["SucceedTask"] = "SucceedTask"
    # What the task set on its outlets (tradewind/asset_events.py): extras, alias resolutions.
    asset_events: list[dict[str, Any]] = Field(default_factory=list)
    # A branch's or short circuit's choice: the task or group ids to follow ([]: none). The
    # store skips the others with the end (state.end_plan.SkipDownstream).
    follow: list[str] | None = None


class FailTask(_Message):
    type: Literal["FailTask"] = "FailTask"
    error: str
    retryable: bool = True
    # Set by the task's retry policy: the wait before the next try, instead of retry_delay.
    retry_delay_seconds: float | None = None


class SkipTask(_Message):
    type: Literal["SkipTask"] = "SkipTask"
    reason: str = ""


class RescheduleTask(_Message):
    """A sensor in reschedule mode not done yet: end the try, poke again at ``reschedule_date``."""

    type: Literal["RescheduleTask"] = "RescheduleTask"
    reschedule_date: dt.datetime


# --- replies: supervisor -> task (noun + Result) ------------------------------------------


class TaskDetails(_Message):
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


class XComResult(_Message):
    type: Literal["XComResult"] = "XComResult"
    found: bool
    value: Any = None
    # Set when ``value`` is the list of a mapped task's XComs: the map index of each item.
    map_indexes: list[int] | None = None


class StateValueResult(_Message):
    type: Literal["StateValueResult"] = "StateValueResult"
    found: bool
    value: Any = None


class CheckpointBatchesResult(_Message):
    type: Literal["CheckpointBatchesResult"] = "CheckpointBatchesResult"
    batches: dict[int, Any] = Field(default_factory=dict)
    marker: Any = None


class ConnectionResult(_Message):
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


class VariableResult(_Message):
    type: Literal["VariableResult"] = "VariableResult"
    key: str
    found: bool
    value: str | None = None


class AssetEventsResult(_Message):
    type: Literal["AssetEventsResult"] = "AssetEventsResult"
    events: list[dict[str, Any]] = Field(default_factory=list)


class OKResponse(_Message):
    type: Literal["OKResponse"] = "OKResponse"


class ErrorResponse(_Message):
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
    | GetAssetStateValue
    | SetAssetStateValue
    | DeleteAssetStateValue
    | SucceedTask
    | FailTask
    | SkipTask
    | RescheduleTask,
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
    | OKResponse
    | ErrorResponse,
    Field(discriminator="type"),
]
TO_SUPERVISOR: TypeAdapter[ToSupervisor] = TypeAdapter(ToSupervisor)
# Decoded in the task process, where pydantic's process-wide string cache is the parent's pages:
# caching every string (the default) cost ~50 copy-on-write faults (~0.2 ms) per task process;
# caching keys only measured the same as no cache, and still shares a large reply's keys.
TO_TASK: TypeAdapter[ToTask] = TypeAdapter(ToTask, config=ConfigDict(cache_strings="keys"))


# --- the backend helper channel (DESIGN.md §6's XCom backend helper) ----------------------
# Same frames, other roles: the helper asks for work (``AwaitXComBackendCall``), and each answer
# (``XComBackendResult``) is also its request for the next call, so the supervisor never sends
# anything the helper did not ask for. Its Connection/Variable look-ups and secrets travel as the
# task's do.


class XComItem(BaseModel):
    """One XCom: where it lives, and a value (``store``) or the stored row (other operations)."""

    model_config = ConfigDict(extra="forbid")

    dag_id: str
    run_id: str
    task_id: str
    map_index: int = -1
    key: str
    value: Any = None


class AwaitXComBackendCall(_Message):
    type: Literal["AwaitXComBackendCall"] = "AwaitXComBackendCall"


class XComBackendResult(_Message):
    type: Literal["XComBackendResult"] = "XComBackendResult"
    value: Any = None
    # "<Type>: <message>" of the exception the call raised; None when it succeeded.
    error: str | None = None


class XComBackendCall(_Message):
    """The reply to the helper's await or result: the next call to run, or ``exit``."""

    type: Literal["XComBackendCall"] = "XComBackendCall"
    operation: Literal["exit", "load", "load_many", "purge", "store"]
    # store, load, purge: one item; load_many: the rows in the order their values come back.
    items: list[XComItem] = Field(default_factory=list)
    # Whose backend runs it: the XCom backend, or the state store's (object storage).
    backend: Literal["xcom", "state"] = "xcom"


FromHelper = Annotated[
    XComBackendResult | AwaitXComBackendCall | MaskSecret | GetVariable | GetConnection,
    Field(discriminator="type"),
]
ToHelper = Annotated[
    XComBackendCall | ConnectionResult | VariableResult | OKResponse | ErrorResponse,
    Field(discriminator="type"),
]
FROM_HELPER: TypeAdapter[FromHelper] = TypeAdapter(FromHelper)
TO_HELPER: TypeAdapter[ToHelper] = TypeAdapter(ToHelper)


# --- the fork server channel (docs/decisions/tasks-fork-from-a-lean-server.md) ------------
# SOCK_SEQPACKET pairs, one JSON message per packet, since some carry file descriptors
# (SCM_RIGHTS). The server hands its supervisor a spare task process's channel ahead of need;
# the supervisor sends the start of a try down that channel itself, then tells the server the
# spare was taken; the server says how each taken task process exited once it has reaped it.


class SpareReady(_Message):
    """A spare task process waits on the channel sent with this (server → supervisor)."""

    type: Literal["SpareReady"] = "SpareReady"
    pid: int


class StartTaskProcess(_Message):
    """Run this task on the comms socket and pipes sent with it (supervisor → spare)."""

    type: Literal["StartTaskProcess"] = "StartTaskProcess"
    fileloc: str
    dag_id: str
    task_id: str
    # The handshake's reply, when the supervisor could give it before the start: the task
    # process then skips the handshake (docs/protocol.md §5).
    details: TaskDetails | None = None
    # TRADEWIND_TASK_PROCESS_REUSE: after this try, say ``TaskProcessIdle`` or
    # ``TaskProcessExiting`` on this channel, and if idle wait on it for the next start.
    then_wait: bool = False


class SpareTaken(_Message):
    """The spare ``pid`` runs a task of ``fileloc`` now (supervisor → server)."""

    type: Literal["SpareTaken"] = "SpareTaken"
    pid: int
    fileloc: str
    # False when the spare stays warm for the supervisor's next tries: the server forks no
    # next spare until ``ForkSpare`` (a spare idle beside a warm process: its private pages).
    next_spare: bool = True


class ForkSpare(_Message):
    """Fork a spare now (supervisor → server): it has none, and none is coming."""

    type: Literal["ForkSpare"] = "ForkSpare"


class TaskProcessExited(_Message):
    type: Literal["TaskProcessExited"] = "TaskProcessExited"
    pid: int
    # As ``os.waitstatus_to_exitcode``: negative when a signal killed it.
    exit_code: int


FromForkServer = Annotated[
    SpareReady | TaskProcessExited | ErrorResponse, Field(discriminator="type")
]
FROM_FORK_SERVER: TypeAdapter[FromForkServer] = TypeAdapter(FromForkServer)
ToForkServer = Annotated[SpareTaken | ForkSpare, Field(discriminator="type")]
TO_FORK_SERVER: TypeAdapter[ToForkServer] = TypeAdapter(ToForkServer)


# --- a warm task process's channel (TRADEWIND_TASK_PROCESS_REUSE, DESIGN.md §7) -----------
# The spare's channel, kept by the supervisor after a start with ``then_wait``. Once the try's
# outcome is said, and before the task process closes the try's socket and pipes (so the
# supervisor finds it waiting when it sees them close), it says one of these two.


class TaskProcessIdle(_Message):
    """The try ended cleanly: the next ``StartTaskProcess`` may come on this channel."""

    type: Literal["TaskProcessIdle"] = "TaskProcessIdle"
    pid: int


class TaskProcessExiting(_Message):
    """The try left the process unfit for another (a child, a changed cwd...): it exits."""

    type: Literal["TaskProcessExiting"] = "TaskProcessExiting"
    pid: int
    reason: str


FromWarmTaskProcess = Annotated[TaskProcessIdle | TaskProcessExiting, Field(discriminator="type")]
FROM_WARM_TASK_PROCESS: TypeAdapter[FromWarmTaskProcess] = TypeAdapter(FromWarmTaskProcess)


# --- frames -------------------------------------------------------------------------------


def encode(message: BaseModel) -> bytes:
    body = message.model_dump_json().encode()
    return _HEADER.pack(len(body)) + body


class PreEncoded:
    """A request dumped to JSON once, whose frames differ only in their ``id``.

    For the requests every Python task process sends unchanged (the handshake, ``SucceedTask``):
    building and dumping the model in a freshly forked process cost ~0.25 ms each, mostly
    copy-on-write faults on pydantic's objects.
    """

    def __init__(self, message: _Message) -> None:
        # What follows the id, as encode() writes it: every message has a type after its id.
        self._after_id = message.model_dump_json(exclude={"id"}).encode()[1:]

    def frame(self, request_id: int) -> bytes:
        body = b'{"id":%d,%b' % (request_id, self._after_id)
        return _HEADER.pack(len(body)) + body


def read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise EOFError("the other side closed the channel")
        chunks += chunk
    return bytes(chunks)


def read_frame(sock: socket.socket) -> bytes:
    (size,) = _HEADER.unpack(read_exactly(sock, _HEADER.size))
    if size > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {size} bytes is over the {MAX_FRAME_BYTES} limit")
    return read_exactly(sock, size)


class FrameBuffer:
    """Reassembles frames from a non-blocking socket's reads (the supervisor's side)."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._buffer += data
        frames = []
        while len(self._buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self._buffer)
            if size > MAX_FRAME_BYTES:
                raise ProtocolError(f"frame of {size} bytes is over the {MAX_FRAME_BYTES} limit")
            if len(self._buffer) < _HEADER.size + size:
                break
            frames.append(bytes(self._buffer[_HEADER.size : _HEADER.size + size]))
            del self._buffer[: _HEADER.size + size]
        return frames
