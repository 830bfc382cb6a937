"""``get_current_context()``: what a running task knows about itself.

The task process sets the context before calling the task function; everything in it that
reaches the SQL store (XComs, the state store) goes through the supervisor client.
"""

from __future__ import annotations

import contextvars
import datetime as dt
from dataclasses import dataclass
from typing import Any, Protocol

from tradewind.xcom_arg import RETURN_VALUE


class SupervisorClient(Protocol):
    """What the task side may ask its supervisor for (implemented by the worker's runner)."""

    def get_xcom(self, task_id: str, key: str, map_index: int | None) -> Any: ...

    def set_xcom(self, key: str, value: Any) -> None: ...

    def get_state(self, key: str) -> Any: ...

    def set_state(self, key: str, value: Any, expires_at: dt.datetime | None) -> None: ...

    def delete_state(self, key: str) -> None: ...

    def clear_state(self, key_suffix: str = "") -> None: ...


@dataclass
class RuntimeTaskInstance:
    """The ``ti`` of the context: ids of this try, and XCom access for classic-style tasks."""

    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    try_number: int
    client: SupervisorClient

    def xcom_pull(
        self, task_ids: str | None = None, key: str = RETURN_VALUE, map_indexes: int | None = None
    ) -> Any:
        return self.client.get_xcom(task_ids or self.task_id, key, map_indexes)

    def xcom_push(self, key: str, value: Any) -> None:
        self.client.set_xcom(key, value)


_CONTEXT: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("tradewind_context")

#: Context keys a task function may also receive by naming them as parameters.
CONTEXT_KEYS = (
    "ti",
    "dag_run",
    "params",
    "task_state_store",
    "logical_date",
    "data_interval_start",
    "data_interval_end",
    "run_id",
    "dag",
    "task",
)


def get_current_context() -> dict[str, Any]:
    """The context of the running task; an error outside of one."""
    try:
        return _CONTEXT.get()
    except LookupError:
        raise RuntimeError("get_current_context() called outside a running task") from None


def set_current_context(context: dict[str, Any]) -> contextvars.Token[dict[str, Any]]:
    return _CONTEXT.set(context)
