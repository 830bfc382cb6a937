"""The backend helper's channel: the helper process asks for XCom backend calls and answers them.

DESIGN.md §6: a runtime task's XCom backend, and the object I/O of large state values, run in a
helper process the supervisor starts per try (``worker/backend_helper*.py``). Rules, and why:
- Same length-prefixed frames as the task's channel (``framing.py``), on a socket of its own.
- The helper only asks, as a task does: it asks for work (``AwaitXComBackendCall``), and each
  answer (``XComBackendResult``) is also its request for the next call, answered with an
  ``XComBackendCall`` (``exit`` included). The supervisor so never sends anything the helper did
  not ask for, and services it from the same selector as the task it serves.
- Its Connection and Variable look-ups and its secrets travel as the task's do: they are the task
  channel's messages (``task.py``), so the supervisor answers both with the same handlers.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from worker.wire.framing import Message
from worker.wire.task import (
    ConnectionResult,
    ErrorResponse,
    GetConnection,
    GetVariable,
    MaskSecret,
    OKResponse,
    VariableResult,
)


class XComItem(BaseModel):
    """One XCom: where it lives, and a value (``store``) or the stored row (other operations)."""

    model_config = ConfigDict(extra="forbid")

    dag_id: str
    run_id: str
    task_id: str
    map_index: int = -1
    key: str
    value: Any = None


class AwaitXComBackendCall(Message):
    type: Literal["AwaitXComBackendCall"] = "AwaitXComBackendCall"


class XComBackendResult(Message):
    type: Literal["XComBackendResult"] = "XComBackendResult"
    value: Any = None
    # "<Type>: <message>" of the exception the call raised; None when it succeeded.
    error: str | None = None


class XComBackendCall(Message):
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
