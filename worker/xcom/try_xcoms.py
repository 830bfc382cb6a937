"""How one try's XComs and state objects are served: where backend calls go, and what the
handshake must do first (purge what an earlier try left, load a runtime task's arguments).

``prepare_xcoms`` decides it once, when the try starts, and starts the backend helper process
if the try needs one; the handlers (``serving.py``, ``worker/state_store/serving.py``) only read
the ``TryXComs`` it returns.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from state.core import XCom, session_scope
from state.records import TIKey
from tradewind.context import CONTEXT_KEYS
from worker.helper.client import BackendHelper, BackendHelperOnDemand
from worker.supervisor.logs import TryLog
from worker.task_runner.mapping import is_expanded
from worker.xcom.calls import BackendCalls, InProcessCalls
from worker.xcom.configured import backend_class, runs_in_helper
from worker.xcom.sql import SqlXComBackend

if TYPE_CHECKING:
    from state.engine import HeldTry
    from tradewind.settings import Settings


def _passing_rows_through() -> BackendCalls:
    return InProcessCalls(SqlXComBackend())


@dataclass(frozen=True)
class TryXComs:
    """What one try's XCom handlers need: where calls go, and what to do at the handshake.

    The helper process is the try's, not only the XComs': the state store's object calls go to
    it too (``state_calls``).
    """

    calls: BackendCalls = field(default_factory=_passing_rows_through)
    helper: BackendHelper | BackendHelperOnDemand | None = None
    # Where state values bound for object storage go (TRADEWIND_STATE_STORE_BACKEND=
    # object_storage): the helper. None with the SQL state backend.
    state_calls: BackendCalls | None = None
    # Where the handshake's purges go, if not to ``calls``: a Python task's rows pass through the
    # supervisor as given, but what an earlier try stored must be purged by the real backend.
    purges: BackendCalls | None = None
    # Rows an earlier try of this task instance left, as (key, row): purged before this try runs.
    stale: list[tuple[str, Any]] = field(default_factory=list)
    # A runtime task's arguments by parameter name, XComArgs still inside.
    arguments: dict[str, Any] = field(default_factory=dict)
    # Those of them an ``.expand`` maps over: each task instance gets its own item of each.
    mapped: list[str] = field(default_factory=list)


def prepare_xcoms(held: HeldTry, task: Any, settings: Settings, log: TryLog) -> TryXComs:
    """How this try's XComs and state objects will be served; starts the helper if needed.

    With the state store on object storage, a helper is made ready to start at its first call.
    Raises ``SettingsError`` when ``TRADEWIND_XCOM_BACKEND`` names no usable backend.
    """
    runs_elsewhere = runs_in_helper(backend_class(settings.xcom_backend))
    runtime = task.options.command is not None
    # A first try has nothing left behind (a clear deletes XComs): skip the query.
    stale = stale_rows(settings.sql_url, held.ti) if held.fence.try_number > 1 else []
    started = BackendHelper.start(log) if runs_elsewhere and (runtime or stale) else None
    helper: BackendHelper | BackendHelperOnDemand | None = started
    objects = settings.state_store_backend == "object_storage"
    if objects:
        # Most tries store no large state value: without a helper already, start one if needed.
        helper = started or BackendHelperOnDemand(log)
    return TryXComs(
        calls=started if runtime and started is not None else _passing_rows_through(),
        helper=helper,
        state_calls=helper if objects else None,
        purges=None if runtime else started,
        stale=stale,
        arguments=argument_template(task) if runtime else {},
        mapped=list(task.mapping["kwargs"]) if runtime and is_expanded(task) else [],
    )


def row_of(ti: TIKey) -> tuple[Any, ...]:
    """The WHERE clauses of the XCom rows of ``ti``."""
    return (
        XCom.dag_id == ti.dag_id,
        XCom.run_id == ti.run_id,
        XCom.task_id == ti.task_id,
        XCom.map_index == ti.map_index,
    )


def stale_rows(url: str, ti: TIKey) -> list[tuple[str, Any]]:
    """The XCom rows of ``ti`` that exist before its try runs: left by an earlier try."""
    with session_scope(url) as session:
        rows = session.execute(select(XCom.key, XCom.value).where(*row_of(ti)).order_by(XCom.key))
        return [(row.key, json.loads(row.value)) for row in rows]


def argument_template(task: Any) -> dict[str, Any]:
    """A runtime task's arguments by parameter name (defaults included), XComArgs inside; an
    ``.expand``'s mapped arguments whole (the handshake picks each task instance's item)."""
    function = task.python_callable
    kwargs = {**task.kwargs, **(task.mapping["kwargs"] if is_expanded(task) else {})}
    if function is None:
        return kwargs
    bound = inspect.signature(function).bind_partial(*task.args, **kwargs)
    given = set(bound.arguments)
    bound.apply_defaults()
    return {
        name: value
        for name, value in bound.arguments.items()
        if name in given or name not in CONTEXT_KEYS
    }
