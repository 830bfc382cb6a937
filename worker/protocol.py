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
import json
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


class MaskSecret(_Message):
    type: Literal["MaskSecret"] = "MaskSecret"
    value: str


class SucceedTask(_Message):
    type: Literal["SucceedTask"] = "SucceedTask"


class FailTask(_Message):
    type: Literal["FailTask"] = "FailTask"
    error: str
    retryable: bool = True


class SkipTask(_Message):
    type: Literal["SkipTask"] = "SkipTask"
    reason: str = ""


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
    logical_date: dt.datetime | None = None
    data_interval_start: dt.datetime | None = None
    data_interval_end: dt.datetime | None = None
    # Upstream XComs already resolved, for runtime tasks that do not parse the DAG.
    arguments: dict[str, Any] = Field(default_factory=dict)


class XComResult(_Message):
    type: Literal["XComResult"] = "XComResult"
    found: bool
    value: Any = None


class StateValueResult(_Message):
    type: Literal["StateValueResult"] = "StateValueResult"
    found: bool
    value: Any = None


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
    | MaskSecret
    | SucceedTask
    | FailTask
    | SkipTask,
    Field(discriminator="type"),
]
ToTask = Annotated[
    TaskDetails | XComResult | StateValueResult | OKResponse | ErrorResponse,
    Field(discriminator="type"),
]
TO_SUPERVISOR: TypeAdapter[ToSupervisor] = TypeAdapter(ToSupervisor)
TO_TASK: TypeAdapter[ToTask] = TypeAdapter(ToTask)


# --- frames -------------------------------------------------------------------------------


def encode(message: BaseModel) -> bytes:
    body = message.model_dump_json().encode()
    return _HEADER.pack(len(body)) + body


def encode_json(payload: dict[str, Any]) -> bytes:
    body = json.dumps(payload, allow_nan=False).encode()
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
