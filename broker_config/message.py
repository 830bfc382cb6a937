"""The task-instance message: ids only, JSON, one per (task instance, try)."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class InvalidMessage(ValueError):
    """A broker message that is not a task-instance message."""


class TaskInstanceMessage(BaseModel):
    """What a worker needs to find and claim one try; the dag/task ids are for logs."""

    # strict: a JSON message already has the right types; coercing true -> 1 or "7" -> 7 would
    # claim a task instance the sender never named.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    ti_id: int = Field(gt=0)
    try_number: int = Field(ge=1)
    dag_id: str
    run_id: str
    task_id: str
    map_index: int = -1
    # Queued by its upstream's end (a supervisor's hand-over), not by a scheduler: its wait is a
    # chain's hop (the metric chain_hop_seconds). Sent only when true.
    handed_over: bool = False

    def describe(self) -> str:
        index = f"[{self.map_index}]" if self.map_index >= 0 else ""
        return f"{self.dag_id}/{self.run_id}/{self.task_id}{index} try {self.try_number}"


def parse_message(payload: Any) -> TaskInstanceMessage:
    """Validate a received payload; one line naming what is wrong otherwise."""
    try:
        return TaskInstanceMessage.model_validate(payload)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "message"
        raise InvalidMessage(f"malformed task-instance message: {where}: {first['msg']}") from None


class QueuedTry(Protocol):
    """What a queued try carries (the state store's rows have these attributes)."""

    @property
    def ti_id(self) -> int: ...
    @property
    def try_number(self) -> int: ...
    @property
    def dag_id(self) -> str: ...
    @property
    def run_id(self) -> str: ...
    @property
    def task_id(self) -> str: ...
    @property
    def map_index(self) -> int: ...
    @property
    def queue(self) -> str: ...


def message_of(queued: QueuedTry, handed_over: bool = False) -> TaskInstanceMessage:
    return TaskInstanceMessage(
        handed_over=handed_over,
        ti_id=queued.ti_id,
        try_number=queued.try_number,
        dag_id=queued.dag_id,
        run_id=queued.run_id,
        task_id=queued.task_id,
        map_index=queued.map_index,
    )


def payload_of(message: TaskInstanceMessage) -> dict[str, Any]:
    """The message as sent: ``handed_over`` only when true, so other messages are as before."""
    return message.model_dump(exclude={"handed_over"} if not message.handed_over else None)
