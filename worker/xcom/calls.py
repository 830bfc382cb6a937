"""Running ``XComBackendCall``s: the one place a call's operation meets a backend method.

The helper process runs calls with ``run_call``; the supervisor runs them in its own process
only for the SQL backend (``InProcessCalls``), whose calls do no I/O. Both hand the result to
a callback, so the supervisor's code reads the same whether a call is answered now or later.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from worker import wire as p
from worker.xcom.base import XComAddress, XComBackend, XComBackendError

Finish = Callable[[p.XComBackendResult], None]


class BackendCalls(Protocol):
    """Where the supervisor sends a backend call; ``finish`` takes its result, now or later."""

    def call(self, call: p.XComBackendCall, finish: Finish) -> None: ...


def address(item: p.XComItem) -> XComAddress:
    return XComAddress(item.dag_id, item.run_id, item.task_id, item.map_index, item.key)


def item(where: XComAddress, value: Any) -> p.XComItem:
    return p.XComItem(
        dag_id=where.dag_id,
        run_id=where.run_id,
        task_id=where.task_id,
        map_index=where.map_index,
        key=where.key,
        value=value,
    )


def _one(call: p.XComBackendCall) -> tuple[XComAddress, Any]:
    if len(call.items) != 1:
        raise ValueError(f"a {call.operation} call takes one item, got {len(call.items)}")
    return address(call.items[0]), call.items[0].value


def _dispatch(backend: XComBackend, call: p.XComBackendCall) -> Any:
    if call.operation == "store":
        return backend.store(*_one(call))
    if call.operation == "load":
        return backend.load(*_one(call))
    if call.operation == "load_many":
        return backend.load_many([(address(i), i.value) for i in call.items])
    if call.operation == "purge":
        return backend.purge(*_one(call))
    raise ValueError(f"unknown XCom backend operation {call.operation!r}")


def run_call(backend: XComBackend, call: p.XComBackendCall) -> p.XComBackendResult:
    """Run ``call``; any exception of the backend comes back as ``"<Type>: <message>"``."""
    try:
        return p.XComBackendResult(value=_dispatch(backend, call))
    except Exception as error:
        # A user's backend may raise anything; the caller must get a result, never a crash.
        return p.XComBackendResult(error=f"{type(error).__name__}: {error}")


def result_value(result: p.XComBackendResult) -> Any:
    """The value of a result, or ``XComBackendError`` with the error it carries."""
    if result.error is not None:
        raise XComBackendError(result.error)
    return result.value


class InProcessCalls:
    """Runs calls here and now: for the SQL backend, which only passes rows through."""

    def __init__(self, backend: XComBackend) -> None:
        self.backend = backend

    def call(self, call: p.XComBackendCall, finish: Finish) -> None:
        finish(run_call(self.backend, call))
