"""A try's context for running the standard provider's operators in the test process."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tradewind.connections import Connection
from tradewind.context import RuntimeTaskInstance, set_current_context
from tradewind.runtime_context import DagRunInfo, date_keys


class FakeClient:
    """The supervisor's side, in memory: the state store and the connections."""

    details = None

    def __init__(self, connections: dict[str, Connection] | None = None) -> None:
        self.state: dict[str, Any] = {}
        self.connections = connections or {}

    def get_state(self, key: str) -> Any:
        return self.state.get(key)

    def set_state(self, key: str, value: Any, expires_at: Any) -> None:
        self.state[key] = value

    def delete_state(self, key: str) -> None:
        self.state.pop(key, None)

    def get_connection(self, conn_id: str) -> Connection:
        return self.connections[conn_id]


def context_of(
    operator: Any,
    run_type: str = "manual",
    logical_date: dt.datetime | None = None,
    interval: tuple[dt.datetime, dt.datetime] | None = None,
    client: FakeClient | None = None,
) -> dict[str, Any]:
    """The context ``operator``'s task gets in a try of a run of ``run_type``."""
    logical_date = logical_date or dt.datetime(2026, 1, 5, 12, tzinfo=dt.UTC)  # a Monday
    start, end = interval or (None, None)
    task = operator.task
    ti = RuntimeTaskInstance(task.dag.dag_id, "r1", task.task_id, -1, 1, client or FakeClient())
    dag_run = DagRunInfo(task.dag.dag_id, "r1", run_type, {}, logical_date, start, end)
    return {
        "ti": ti,
        "task_instance": ti,
        "task": task,
        "dag": task.dag,
        "dag_run": dag_run,
        "run_id": "r1",
        "params": {},
        "logical_date": logical_date,
        "data_interval_start": start,
        "data_interval_end": end,
        "templates_dict": None,
        **date_keys(logical_date),
    }


@contextmanager
def running(context: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``context`` as the current one (``Connection.get`` reads it), as in a task process."""
    token = set_current_context(context)
    try:
        yield context
    finally:
        from tradewind.context import _CONTEXT

        _CONTEXT.reset(token)
