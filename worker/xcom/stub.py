"""An in-memory backend for tests: values kept in this process, rows hold a reference.

Use it in unit tests of code that pushes and pulls XComs through a backend (ours and users'):
it behaves like a reference-keeping backend (a purged or unknown reference fails to load) and
records every call, without storage. Its values live in one process only, so it is no use to a
worker fleet.
"""

from __future__ import annotations

from typing import Any

from worker.xcom.base import XComAddress, XComBackend, XComBackendError

STUB_KEY = "__stub_xcom__"


class StubXComBackend(XComBackend):
    """Keeps values in a dict; ``calls`` lists ``(hook, address)`` in the order they came."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.calls: list[tuple[str, XComAddress]] = []

    @staticmethod
    def reference(where: XComAddress) -> str:
        return f"{where.dag_id}/{where.run_id}/{where.task_id}/{where.map_index}/{where.key}"

    def store(self, where: XComAddress, value: Any) -> Any:
        self.calls.append(("store", where))
        reference = self.reference(where)
        self.values[reference] = value
        return {STUB_KEY: reference}

    def load(self, where: XComAddress, row: Any) -> Any:
        self.calls.append(("load", where))
        reference = row.get(STUB_KEY) if isinstance(row, dict) else None
        if reference is None:
            return row
        if reference not in self.values:
            raise XComBackendError(f"the value of {where.describe()} is missing: {reference}")
        return self.values[reference]

    def purge(self, where: XComAddress, row: Any) -> None:
        self.calls.append(("purge", where))
        if isinstance(row, dict) and STUB_KEY in row:
            self.values.pop(row[STUB_KEY], None)
