"""How the supervisor serves one try's XComs: pushes, pulls, a runtime task's arguments, and
the purge of what an earlier try left.

Every backend call goes through ``TryXComs.calls`` (``try_xcoms.py``): for a Python task, or
with the SQL backend, an in-process SQL backend that passes rows through as given (a Python task
runs the configured backend itself and sends rows); for a runtime task with another backend, the
helper process. Handlers whose call goes to the helper return ``None`` and reply later, through
``ctx.reply_later``, once the call's callback runs; the loop goes on meanwhile.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from sqlalchemy import delete
from sqlalchemy.exc import SQLAlchemyError

from state.core import TryFenced, XCom, assert_fence, session_scope
from state.records import TIKey, database_max_value_bytes, read_xcom, read_xcoms, write_xcom
from tradewind.xcom_arg import XComArg
from worker import wire as p
from worker.supervisor.background import Outcome
from worker.supervisor.request_table import handles
from worker.supervisor.try_context import TryContext
from worker.task_runner.mapping import arguments_at, items_of
from worker.xcom.base import XComAddress, XComBackendError
from worker.xcom.calls import item, result_value
from worker.xcom.try_xcoms import row_of


def _address(
    ti: TIKey, key: str, task_id: str | None = None, map_index: int | None = None
) -> XComAddress:
    return XComAddress(
        ti.dag_id,
        ti.run_id,
        task_id or ti.task_id,
        ti.map_index if map_index is None else map_index,
        key,
    )


# --- the handshake ---------------------------------------------------------------------------


def details_at_start(ctx: TryContext) -> p.TaskDetails | None:
    """The handshake's reply, when it needs nothing done first (no stale XCom to purge, no
    argument to load): a Python task process then gets it with its start, and asks no more."""
    xcoms = ctx.xcoms
    if xcoms.stale or _argument_refs(xcoms.arguments):
        return None
    return _with_arguments(ctx, xcoms.arguments)


def start_try(ctx: TryContext, request: p.GetTaskDetails) -> p.Message | None:
    """Purge the stale XComs, resolve a runtime task's arguments, then send ``TaskDetails``.

    The task waits for this reply before it does anything, so nothing it pushes can race the
    purge of an object at the same (deterministic) path.
    """
    ready = details_at_start(ctx)
    if ready is not None:
        return ready
    xcoms = ctx.xcoms
    refs = list(dict.fromkeys(_argument_refs(xcoms.arguments)))
    failures: list[str] = []
    # One queue, in order: the load below is answered only after every purge is.
    calls = xcoms.purges or xcoms.calls
    for key, row in xcoms.stale:
        call = p.XComBackendCall(operation="purge", items=[item(_address(ctx.ti, key), row)])
        calls.call(call, _purged(ctx, key, failures))
    with session_scope(ctx.url) as session:
        found = {ref: _stored_items(session, ctx.ti, *ref) for ref in refs}
    items = [one for many, _ in found.values() for one in many]

    def loaded(result: p.XComBackendResult) -> None:
        ctx.reply_later(request, lambda: _details(ctx, failures, found, result))

    calls.call(p.XComBackendCall(operation="load_many", items=items), loaded)
    return None


def _purged(
    ctx: TryContext, key: str, failures: list[str]
) -> Callable[[p.XComBackendResult], None]:
    def finish(result: p.XComBackendResult) -> None:
        if result.error is not None:
            failures.append(result.error)
            return  # the row stays, so the next try purges it again
        try:
            with session_scope(ctx.url) as session:
                assert_fence(session, ctx.fence)
                session.execute(delete(XCom).where(*row_of(ctx.ti), XCom.key == key))
        except TryFenced as error:
            ctx.lost = True
            failures.append(str(error))
            return
        except SQLAlchemyError as error:
            failures.append(f"{type(error).__name__}: {str(error).splitlines()[0]}")
            return
        ctx.log.line("supervisor", f"purged XCom {key!r} left by an earlier try")

    return finish


def _details(
    ctx: TryContext,
    failures: list[str],
    found: dict[tuple[str, str], tuple[list[p.XComItem], bool]],
    result: p.XComBackendResult,
) -> p.Message:
    if failures:
        raise XComBackendError(f"could not purge an XCom an earlier try left: {failures[0]}")
    values = iter(result_value(result) or [])
    resolved: dict[tuple[str, str], Any] = {}
    for ref, (items, mapped) in found.items():
        taken = [next(values) for _ in items]
        resolved[ref] = taken if mapped else (taken[0] if taken else None)
    return _with_arguments(ctx, _substitute(ctx.xcoms.arguments, resolved))


def _with_arguments(ctx: TryContext, arguments: dict[str, Any]) -> p.TaskDetails:
    """``TaskDetails`` with the task's arguments, each mapped one as this task instance's item."""
    if ctx.xcoms.mapped:
        lists = {name: items_of(name, arguments[name]) for name in ctx.xcoms.mapped}
        arguments = {**arguments, **arguments_at(lists, ctx.ti.map_index)}
    return ctx.details.model_copy(update={"arguments": arguments})


def _argument_refs(value: Any) -> list[tuple[str, str]]:
    if isinstance(value, XComArg):
        return [(value.task.task_id, value.key)]
    if isinstance(value, list | tuple):
        return [ref for one in value for ref in _argument_refs(one)]
    if isinstance(value, dict):
        return [ref for one in value.values() for ref in _argument_refs(one)]
    return []


def _substitute(value: Any, resolved: dict[tuple[str, str], Any]) -> Any:
    if isinstance(value, XComArg):
        return resolved[(value.task.task_id, value.key)]
    if isinstance(value, list | tuple):
        return [_substitute(one, resolved) for one in value]
    if isinstance(value, dict):
        return {name: _substitute(one, resolved) for name, one in value.items()}
    return value


# --- pulls and pushes ------------------------------------------------------------------------


def _stored_items(
    session: Any, ti: TIKey, task_id: str, key: str, map_index: int | None = None
) -> tuple[list[p.XComItem], bool]:
    """The stored rows of one XCom as call items, and whether they are a mapped task's list."""
    if map_index is not None:
        text = read_xcom(session, TIKey(ti.dag_id, ti.run_id, task_id, map_index), key)
        rows = [] if text is None else [(map_index, text)]
        mapped = False
    else:
        rows = read_xcoms(session, ti.dag_id, ti.run_id, task_id, key)
        mapped = len(rows) > 1 or bool(rows and rows[0][0] >= 0)
    items = [item(_address(ti, key, task_id, index), json.loads(text)) for index, text in rows]
    return items, mapped


@handles
def get_xcom(ctx: TryContext, request: p.GetXCom) -> p.Message | None:
    def read() -> tuple[list[p.XComItem], bool]:
        with session_scope(ctx.url) as session:
            return _stored_items(session, ctx.ti, request.task_id, request.key, request.map_index)

    def then(outcome: Outcome) -> None:
        ctx.reply_later(request, lambda: _load(ctx, request, *outcome()))

    ctx.background.submit(read, then)
    return None


def _load(
    ctx: TryContext, request: p.GetXCom, items: list[p.XComItem], mapped: bool
) -> p.Message | None:
    if not items:
        return p.XComResult(found=False)
    indexes = [one.map_index for one in items] if mapped else None

    def loaded(result: p.XComBackendResult) -> None:
        ctx.reply_later(request, lambda: _xcom_result(result, indexes))

    ctx.xcoms.calls.call(p.XComBackendCall(operation="load_many", items=items), loaded)
    return None


def _xcom_result(result: p.XComBackendResult, indexes: list[int] | None) -> p.Message:
    values = result_value(result)
    if indexes is None:
        return p.XComResult(found=True, value=values[0])
    return p.XComResult(found=True, value=values, map_indexes=indexes)


@handles
def set_xcom(ctx: TryContext, request: p.SetXCom) -> p.Message | None:
    where = _address(ctx.ti, request.key)

    def stored(result: p.XComBackendResult) -> None:
        ctx.background.submit(
            lambda: _write_row(ctx, where, result_value(result)),
            lambda outcome: ctx.reply_later(request, outcome),
        )

    ctx.xcoms.calls.call(
        p.XComBackendCall(operation="store", items=[item(where, request.value)]), stored
    )
    return None


def _write_row(ctx: TryContext, where: XComAddress, row: Any) -> p.Message:
    text = json.dumps(row, allow_nan=False, separators=(",", ":"))
    size, limit = len(text.encode()), database_max_value_bytes(ctx.url)
    if size > limit:
        # Fail the push: keeping it elsewhere (or truncated) would hide where the value went.
        raise XComBackendError(
            f"{where.describe()} is {size} bytes, over the {limit} bytes the database accepts: "
            "configure TRADEWIND_XCOM_BACKEND=object_storage for values this large"
        )
    with session_scope(ctx.url) as session:
        write_xcom(session, ctx.fence, ctx.ti, where.key, text)
    return p.OKResponse()
