"""What the supervisor does for each request of its task: one small handler per message type.

Dispatch is a table (message class -> handler), written by ``@handles`` from each handler's
annotated request class (``worker/supervisor/request_table.py``): the handlers here, and those of
XComs, state values and assets in their own modules. Every write names the try's fence, so a try
that lost its task instance (cleared, or given up as a zombie) gets an ``ErrorResponse``. What a
handler is given is the try's ``TryContext`` (``worker/supervisor/try_context.py``).
"""

from __future__ import annotations

from urllib.parse import quote, quote_plus

from state.core import Retry, ride_out, session_scope, store_probe
from state.engine import AwaitingInput, Deferred, Failed, Rescheduled, Skipped, Succeeded
from state.records import checkpoints as cp
from state.records import get_connection as read_connection
from state.records import get_variable as read_variable
from tradewind.connections import is_sensitive, sensitive_values
from worker import wire as p
from worker.state_store import serving as state
from worker.supervisor import asset_requests as assets
from worker.supervisor import context_requests
from worker.supervisor import cross_dag_requests as cross_dag
from worker.supervisor.request_table import HANDLERS, handles
from worker.supervisor.try_context import TryContext, answer
from worker.xcom import serving

# The other modules of handlers: importing them registers theirs, so the table is whole once
# this module is imported (worker/supervisor/request_table.py).
HANDLER_MODULES = (serving, state, assets, cross_dag, context_requests)


@handles
def get_task_details(ctx: TryContext, request: p.GetTaskDetails) -> p.Message | None:
    if request.protocol_version != p.PROTOCOL_VERSION:
        return p.ErrorResponse(
            error=f"protocol version {request.protocol_version} is not supported; "
            f"this supervisor speaks {p.PROTOCOL_VERSION}"
        )
    return serving.start_try(ctx, request)


@handles
def set_items_total(ctx: TryContext, request: p.SetItemsTotal) -> p.Message:
    with session_scope(ctx.url) as session:
        cp.set_items_total(session, ctx.fence, request.total)
    return p.OKResponse()


@handles
def mask_secret(ctx: TryContext, request: p.MaskSecret) -> p.Message:
    ctx.log.add_secret(request.value)
    return p.OKResponse()


@handles
def get_connection(ctx: TryContext, request: p.GetConnection) -> p.Message:
    with session_scope(ctx.url) as session:
        row = read_connection(session, request.conn_id)
        if row is None:
            return p.ErrorResponse(error=f"connection {request.conn_id!r} is not defined")
        reply = p.ConnectionResult(
            conn_id=row.conn_id,
            conn_type=row.conn_type,
            host=row.host,
            login=row.login,
            password=row.password,
            schema=row.schema,
            port=row.port,
            extra=dict(row.extra or {}),
        )
    if reply.password:
        ctx.log.add_secret(reply.password)
        ctx.log.add_secret(quote(reply.password, safe=""))  # as it shows in get_uri()
    # The extra's sensitive keys are hidden by the API: the log hides them too.
    for value in sensitive_values(reply.extra):
        ctx.log.add_secret(value)
        ctx.log.add_secret(quote_plus(value))  # as get_uri()'s query string shows it
    return reply


@handles
def get_variable(ctx: TryContext, request: p.GetVariable) -> p.Message:
    with session_scope(ctx.url) as session:
        row = read_variable(session, request.key)
        if row is None:
            return p.VariableResult(key=request.key, found=False)
        value, secret = row.value, row.is_secret
    if secret or is_sensitive(request.key):
        ctx.log.add_secret(value)
    return p.VariableResult(key=request.key, found=True, value=value)


@handles
def succeed_task(ctx: TryContext, request: p.SucceedTask) -> p.Message:
    follow = tuple(request.follow) if request.follow is not None else None
    ctx.outcome = Succeeded(tuple(request.asset_events), follow)
    return p.OKResponse()


@handles
def fail_task(ctx: TryContext, request: p.FailTask) -> p.Message:
    if ctx.lost:
        # Given up elsewhere (a zombie, a clear): the task must not run its failure callback.
        return p.ErrorResponse(error="the try no longer holds its task instance")
    # The error is recorded on the task instance too: no secret of the try goes with it.
    error = ctx.log.mask(request.error)
    ctx.outcome = Failed(error or "failed", request.retryable, request.retry_delay_seconds)
    return p.OKResponse()


@handles
def skip_task(ctx: TryContext, request: p.SkipTask) -> p.Message:
    ctx.outcome = Skipped(request.reason or None)
    return p.OKResponse()


@handles
def reschedule_task(ctx: TryContext, request: p.RescheduleTask) -> p.Message:
    ctx.outcome = Rescheduled(request.reschedule_date)
    return p.OKResponse()


@handles
def defer_task(ctx: TryContext, request: p.DeferTask) -> p.Message:
    ctx.outcome = Deferred(
        request.classpath,
        request.trigger_kwargs,
        request.method_name,
        request.method_kwargs,
        request.timeout_seconds,
    )
    return p.OKResponse()


@handles
def await_input(ctx: TryContext, request: p.AwaitInput) -> p.Message:
    ctx.outcome = AwaitingInput(request.method_name, request.question, request.timeout_seconds)
    return p.OKResponse()


def handle(ctx: TryContext, request: p.Message) -> p.Message | None:
    """Run the handler of ``request``; None when its reply comes later (it waits on the helper)."""
    # A request waits out an outage of the store (state/core/outage.py), as the heartbeat does.
    what = f"{type(request).__name__} of task instance {ctx.fence.ti_id}"
    retry = Retry(what, probe=store_probe(ctx.url))
    return answer(
        ctx, request, lambda: ride_out(lambda: HANDLERS[type(request)](ctx, request), retry)
    )
