"""``get_current_context()``: what a running task knows about itself.

The task process sets the context before calling the task function; everything in it that
reaches the SQL store (XComs, the state store) goes through the supervisor client.
"""

from __future__ import annotations

import contextvars
import datetime as dt
from collections.abc import Sequence
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
        self,
        task_ids: str | Sequence[str] | None = None,
        key: str = RETURN_VALUE,
        map_indexes: int | Sequence[int] | None = None,
        default: Any = None,
    ) -> Any:
        """An XCom of ``task_ids`` (this task when None); a list when given lists.

        A mapped task's XCom is the list of its map indexes' values unless ``map_indexes`` picks.
        """
        if task_ids is None or isinstance(task_ids, str):
            return self._pull_indexes(task_ids or self.task_id, key, map_indexes, default)
        return [self._pull_indexes(tid, key, map_indexes, default) for tid in task_ids]

    def _pull_indexes(
        self, task_id: str, key: str, map_indexes: int | Sequence[int] | None, default: Any
    ) -> Any:
        if map_indexes is None or isinstance(map_indexes, int):
            return self._pull(task_id, key, map_indexes, default)
        return [self._pull(task_id, key, index, default) for index in map_indexes]

    def _pull(self, task_id: str, key: str, map_index: int | None, default: Any) -> Any:
        value = self.client.get_xcom(task_id, key, map_index)
        return default if value is None else value

    def xcom_push(self, key: str, value: Any) -> None:
        self.client.set_xcom(key, value)


#: The type of a task's context (Airflow's ``Context``): a mapping of the keys below.
Context = dict[str, Any]

_CONTEXT: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("tradewind_context")

#: Context keys a task function may also receive by naming them as parameters (Airflow's).
CONTEXT_KEYS = (
    "ti",
    "task_instance",
    "dag_run",
    "params",
    "task_state_store",
    "logical_date",
    "data_interval_start",
    "data_interval_end",
    "ds",
    "ds_nodash",
    "ts",
    "ts_nodash",
    "ts_nodash_with_tz",
    "run_id",
    "dag",
    "task",
    "conn",
    "var",
    "templates_dict",
    "task_instance_key_str",
    # tradewind/context_keys.py
    "macros",
    "prev_start_date_success",
    "prev_end_date_success",
    "prev_data_interval_start_success",
    "prev_data_interval_end_success",
    "expanded_ti_count",
    "triggering_asset_events",
    "map_index_template",
    # Airflow 2's spellings, accepted with a warning at load (tradewind/airflow2_names.py).
    "execution_date",
    "next_execution_date",
    "prev_execution_date",
    "next_ds",
    "next_ds_nodash",
    "prev_ds",
    "prev_ds_nodash",
    "yesterday_ds",
    "yesterday_ds_nodash",
    "tomorrow_ds",
    "tomorrow_ds_nodash",
)


def get_current_context() -> dict[str, Any]:
    """The context of the running task; an error outside of one."""
    try:
        return _CONTEXT.get()
    except LookupError:
        raise RuntimeError("get_current_context() called outside a running task") from None


def set_current_context(context: dict[str, Any]) -> contextvars.Token[dict[str, Any]]:
    return _CONTEXT.set(context)
