"""What the supervisor does for each request of its task: one small handler per message type.

Dispatch is a table (message class -> handler). Every write names the try's fence, so a try
that lost its task instance (cleared, or given up as a zombie) gets an ``ErrorResponse``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from state.db import session_scope
from state.transitions import Fence, TryFenced
from state.values import TIKey, read_state, read_xcom, read_xcoms, write_state, write_xcom
from state.values import delete_states as delete_state_rows
from worker import protocol as p
from worker.logs import TryLog


@dataclass
class Outcome:
    """What the task said about how it ended (None until it says)."""

    state: str
    error: str | None = None
    retryable: bool = True


@dataclass
class TryContext:
    """Everything the handlers of one try need."""

    url: str
    fence: Fence
    ti: TIKey
    details: p.TaskDetails
    log: TryLog
    outcome: Outcome | None = None
    lost: bool = False
    checkpoint_keys: set[str] = field(default_factory=set)


def _json_text(value: Any) -> str:
    return json.dumps(value, allow_nan=False, separators=(",", ":"))


def get_task_details(ctx: TryContext, request: p.GetTaskDetails) -> p._Message:
    if request.protocol_version != p.PROTOCOL_VERSION:
        return p.ErrorResponse(
            error=f"protocol version {request.protocol_version} is not supported; "
            f"this supervisor speaks {p.PROTOCOL_VERSION}"
        )
    return ctx.details


def get_xcom(ctx: TryContext, request: p.GetXCom) -> p._Message:
    with session_scope(ctx.url) as session:
        if request.map_index is None:
            rows = read_xcoms(session, ctx.ti.dag_id, ctx.ti.run_id, request.task_id, request.key)
            if len(rows) > 1 or (rows and rows[0][0] >= 0):
                return p.XComResult(found=True, value=[json.loads(text) for _, text in rows])
            text = rows[0][1] if rows else None
        else:
            key = TIKey(ctx.ti.dag_id, ctx.ti.run_id, request.task_id, request.map_index)
            text = read_xcom(session, key, request.key)
    if text is None:
        return p.XComResult(found=False)
    return p.XComResult(found=True, value=json.loads(text))


def set_xcom(ctx: TryContext, request: p.SetXCom) -> p._Message:
    text = _json_text(request.value)
    with session_scope(ctx.url) as session:
        write_xcom(session, ctx.fence, ctx.ti, request.key, text)
    return p.OKResponse()


def get_state_value(ctx: TryContext, request: p.GetStateValue) -> p._Message:
    with session_scope(ctx.url) as session:
        text = read_state(session, ctx.ti, request.key)
    if text is None:
        return p.StateValueResult(found=False)
    return p.StateValueResult(found=True, value=json.loads(text))


def set_state_value(ctx: TryContext, request: p.SetStateValue) -> p._Message:
    text = _json_text(request.value)
    with session_scope(ctx.url) as session:
        write_state(session, ctx.fence, ctx.ti, request.key, text, request.expires_at)
    return p.OKResponse()


def delete_state_value(ctx: TryContext, request: p.DeleteStateValue) -> p._Message:
    with session_scope(ctx.url) as session:
        delete_state_rows(session, ctx.fence, ctx.ti, [request.key])
    return p.OKResponse()


def clear_state_values(ctx: TryContext, request: p.ClearStateValues) -> p._Message:
    with session_scope(ctx.url) as session:
        delete_state_rows(session, ctx.fence, ctx.ti)
    return p.OKResponse()


def mask_secret(ctx: TryContext, request: p.MaskSecret) -> p._Message:
    ctx.log.add_secret(request.value)
    return p.OKResponse()


def succeed_task(ctx: TryContext, request: p.SucceedTask) -> p._Message:
    ctx.outcome = Outcome("success")
    return p.OKResponse()


def fail_task(ctx: TryContext, request: p.FailTask) -> p._Message:
    ctx.outcome = Outcome("failed", request.error, request.retryable)
    return p.OKResponse()


def skip_task(ctx: TryContext, request: p.SkipTask) -> p._Message:
    ctx.outcome = Outcome("skipped", request.reason or None)
    return p.OKResponse()


Handler = Callable[[TryContext, Any], p._Message]
HANDLERS: dict[type[p._Message], Handler] = {
    p.GetTaskDetails: get_task_details,
    p.GetXCom: get_xcom,
    p.SetXCom: set_xcom,
    p.GetStateValue: get_state_value,
    p.SetStateValue: set_state_value,
    p.DeleteStateValue: delete_state_value,
    p.ClearStateValues: clear_state_values,
    p.MaskSecret: mask_secret,
    p.SucceedTask: succeed_task,
    p.FailTask: fail_task,
    p.SkipTask: skip_task,
}


def handle(ctx: TryContext, request: p._Message) -> p._Message:
    """Run the handler of ``request``; any failure becomes one ``ErrorResponse`` line."""
    try:
        reply = HANDLERS[type(request)](ctx, request)
    except TryFenced as error:
        ctx.lost = True
        reply = p.ErrorResponse(error=str(error))
    except (SQLAlchemyError, ValueError, TypeError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        reply = p.ErrorResponse(error=f"{type(error).__name__}: {first_line}")
    reply.id = request.id
    return reply
