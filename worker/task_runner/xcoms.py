"""The XCom backend as a Python task process runs it: values in, rows out (and back).

A Python task runs the configured backend in its own process, so a large value never crosses
the supervisor: ``store`` turns the value into its row before ``SetXCom``, and a pulled row
(``XComResult``) is loaded here. Built on first use, after the handshake named the task.
"""

from __future__ import annotations

from typing import Any, Protocol

from tradewind.settings import get_settings
from worker import wire as p
from worker.xcom.base import Lookups, XComAddress, XComBackend
from worker.xcom.configured import make_backend
from worker.xcom.sql import SqlXComBackend


class _Client(Lookups, Protocol):
    details: p.TaskDetails | None


class TaskXComs:
    """The task's configured backend, with the addresses of its own and upstream XComs."""

    def __init__(self, client: _Client) -> None:
        self._client = client
        self._backend: XComBackend | None = None

    @property
    def backend(self) -> XComBackend:
        if self._backend is None:
            self._backend = make_backend(get_settings(), self._client)
        return self._backend

    @property
    def rows_are_values(self) -> bool:
        """The backend keeps values in their rows (the default): a row is all there is to see."""
        return type(self.backend) is SqlXComBackend

    def _address(self, task_id: str | None, key: str, map_index: int | None) -> XComAddress:
        details = self._client.details
        assert details is not None, "XComs are used after the handshake"
        if task_id is None:
            return XComAddress(
                details.dag_id, details.run_id, details.task_id, details.map_index, key
            )
        return XComAddress(details.dag_id, details.run_id, task_id, map_index or -1, key)

    def row(self, key: str, value: Any) -> Any:
        """The row to send for this task's XCom ``key``."""
        return self.backend.store(self._address(None, key, None), value)

    def value(self, reply: p.XComResult, task_id: str, key: str, map_index: int | None) -> Any:
        """The value of a pulled XCom: one row, or a mapped task's rows in map order."""
        if not reply.found:
            return None
        if reply.map_indexes is None:
            return self.backend.load(self._address(task_id, key, map_index), reply.value)
        rows = [
            (self._address(task_id, key, index), row)
            for index, row in zip(reply.map_indexes, reply.value, strict=True)
        ]
        return self.backend.load_many(rows)
