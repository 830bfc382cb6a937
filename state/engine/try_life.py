"""The life of a try in the store: ``claim`` it, ``beat`` for it, ``record`` how it ended.

These three are all a supervisor asks of the store about its try (DESIGN.md §7):

- ``claim``: ``queued -> running`` by compare-and-set on ``(ti_id, try_number, state)``, one
  statement on PostgreSQL; every delivery is counted, and a message lost to a race comes back as
  a one-line reason to drop it. The claimed try is a frozen ``HeldTry``.
- ``beat``: the try's heartbeat, a fenced write: ``TryFenced`` once the try lost its task
  instance (cleared, failed, given up as a zombie).
- ``record``: the store judges the try's ``Outcome`` (retry or fail from the tries left and the
  failure's retryability, the retry's time from the task's spec, a success's asset events) and
  records it with the plan of its end (``state.engine.end``).

Each waits out an outage of the store (``state.core.outage``); a claim that never reached it raises
``ClaimUnavailable``, so that its message goes back rather than being dropped.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import uuid
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session

from state.core import (
    INCREMENT,
    TI_TABLE,
    Fence,
    Retry,
    StoreUnavailable,
    TaskInstance,
    TaskInstanceState,
    TaskSpec,
    as_utc,
    count_metric,
    observe_metric,
    ride_out,
    session_scope,
    statement_scope,
    statements_of,
    store_probe,
    utcnow,
)
from state.engine.end import Recorded, Verdict, end_try
from state.engine.liveness import count_redelivery, fail_overdelivered
from state.engine.outcomes import (
    AwaitingInput,
    Deferred,
    Failed,
    Outcome,
    Rescheduled,
    Skipped,
    Succeeded,
)
from state.engine.retries import retry_delay_seconds
from state.engine.scheduling import Enqueue, dag_version
from state.records import OutletEvent, TIKey, events_of_success

TI = TaskInstanceState


class Delivery(Protocol):
    """A message naming one try (``broker_config.TaskInstanceMessage``; ``describe`` for logs)."""

    @property
    def ti_id(self) -> int: ...

    @property
    def try_number(self) -> int: ...

    def describe(self) -> str: ...


@dataclass(frozen=True)
class HeldTry:
    """A try this supervisor now holds, with what it needs to run it."""

    fence: Fence
    ti: TIKey
    run_pk: int
    max_tries: int
    generation: int
    fileloc: str
    task_spec: TaskSpec
    run: dict[str, Any]
    # The version of the DAG the run follows (a structure this process may have read already).
    version_hash: str | None = None
    # A deferred try resuming (DESIGN.md §12): the method to call and its keyword arguments.
    next_method: str | None = None
    next_kwargs: dict[str, Any] | None = None

    @property
    def pool(self) -> str:
        return self.task_spec.pool


# --- claim ------------------------------------------------------------------------------------


class ClaimUnavailable(StoreUnavailable):
    """The claim could not reach the store in time: its message must go back, not be dropped."""


def claim(url: str, message: Delivery, max_deliveries: int | None = None) -> HeldTry | str:
    """``claim_try`` in a statement of its own, waiting out an outage of the store.

    A claim that never reached the store consumed nothing: past the bound, ``ClaimUnavailable``
    tells the Celery task to give the message back (worker/celery_app.py).
    """

    def attempt() -> HeldTry | str:
        with statement_scope(url) as session:
            return claim_try(session, message, max_deliveries)

    retry = Retry(f"claiming {message.describe()}", probe=store_probe(url))
    try:
        return ride_out(attempt, retry)
    except StoreUnavailable as error:
        raise ClaimUnavailable(str(error)) from error


def claim_try(
    session: Session, message: Delivery, max_deliveries: int | None = None
) -> HeldTry | str:
    """Claim ``message``'s try; on a lost race, a one-line reason to drop the message.

    Every delivery is counted in SQL, a dropped copy of a running try's message included; past
    ``max_deliveries`` with no try ending, the try is failed (a task that kills its worker).
    """
    token = uuid.uuid4().hex
    now = utcnow()
    values = {
        "fence_token": token,
        "hostname": _HOSTNAME,
        "pid": os.getpid(),
        "start_date": now,
        "last_heartbeat": now,
        "end_date": None,
        "deliveries": INCREMENT,
    }
    claimed = _claim(session, message, values)
    if claimed is None:
        return _why_not_claimed(session, message, max_deliveries)
    ti, run = claimed
    _count_start(message, as_utc(ti.queued_at), now)
    if max_deliveries is not None and ti.deliveries > max_deliveries:
        return fail_overdelivered(session, ti.id, ti.try_number, ti.deliveries, max_deliveries)
    structure = dag_version(session, ti.dag_id, run.dag_version).structure
    return HeldTry(
        fence=Fence(ti.id, message.try_number, token),
        ti=TIKey(ti.dag_id, ti.run_id, ti.task_id, ti.map_index),
        run_pk=run.run_pk,
        max_tries=ti.max_tries,
        generation=ti.generation,
        fileloc=run.fileloc,
        task_spec=structure.tasks.get(ti.task_id, _NOT_IN_VERSION),
        version_hash=run.run_version,
        next_method=ti.next_method,
        next_kwargs=ti.next_kwargs,
        run={
            "params": {**structure.params, **(run.conf or {})},
            "conf": dict(run.conf or {}),
            "run_type": run.run_type,
            "logical_date": run.logical_date,
            "data_interval_start": run.data_interval_start,
            "data_interval_end": run.data_interval_end,
            "partition_key": run.partition_key,
            "partition_date": run.partition_date,
        },
    )


def _count_start(message: Delivery, queued_at: dt.datetime | None, now: dt.datetime) -> None:
    """``ti_start``, and how long the try waited for it: from its queueing, and for a try an
    upstream's end queued (its queued time is that end's), the chain's hop."""
    count_metric("ti_start")
    if queued_at is None:
        return
    waited = max(0.0, (now - queued_at).total_seconds())
    observe_metric("claim_latency_seconds", waited)
    if getattr(message, "handed_over", False):
        observe_metric("chain_hop_seconds", waited)


_HOSTNAME = socket.gethostname()
# A task the DAG's stored version lacks: its try fails at ``find_task``, with the defaults here.
_NOT_IN_VERSION = TaskSpec()
_TI = TI_TABLE


def _claim(session: Session, message: Delivery, values: dict[str, Any]) -> tuple[Any, Any] | None:
    """The claimed row and its run's, or None when the compare-and-set lost."""
    return statements_of(session).claim(session, message.ti_id, message.try_number, values)


def _why_not_claimed(session: Session, message: Delivery, max_deliveries: int | None) -> str:
    deliveries = count_redelivery(session, message.ti_id, message.try_number)
    if deliveries is not None and max_deliveries is not None and deliveries > max_deliveries:
        return fail_overdelivered(
            session, message.ti_id, message.try_number, deliveries, max_deliveries
        )
    ti = session.get(TaskInstance, message.ti_id)
    if ti is None:
        return f"unknown task instance {message.ti_id}"
    return f"stale or duplicate: task instance is {ti.state} at try {ti.try_number}"


# --- beat -------------------------------------------------------------------------------------


def beat(url: str, fence: Fence) -> None:
    """Write the try's heartbeat, fenced by the try.

    Raises ``TryFenced`` when the try no longer holds its task instance (cleared, failed, or
    given up as a zombie): its supervisor must stop the task. An outage raises the driver's
    error, which the supervisor's beat schedule rides out (``state.core.outage.BeatSchedule``).
    """
    with session_scope(url) as session:
        statements_of(session).beat(session, fence)


# --- record -----------------------------------------------------------------------------------


class Ended(NamedTuple):
    """How the store recorded a try's end: the state it judged the try ended in, whether the try
    still held its task instance, and the tries the end queued (committed: to publish)."""

    state: TaskInstanceState
    recorded: bool
    enqueued: list[Enqueue]


def record(url: str, held: HeldTry, outcome: Outcome) -> Ended:
    """Judge ``outcome`` and record the end of ``held`` with its plan, waiting out an outage."""
    verdict = judge(held, outcome, utcnow())
    recorded = _end_through_outage(url, verdict)
    if recorded.recorded:
        count_metric("ti_finish", state=str(verdict.state))
    return Ended(verdict.state, recorded.recorded, recorded.enqueued)


def judge(held: HeldTry, outcome: Outcome, at: dt.datetime) -> Verdict:
    """The state ``outcome`` ends ``held`` in, and what the end writes besides it.

    A failure is retried when the task allows it and tries are left, after its retry policy's
    delay or else the task's (``state.engine.retries``); a success records its outlets' asset
    events. Pure, so that every case is tested without a database.
    """
    # A supervisor lived to record this end: the delivery count starts over (see claim_try).
    values: dict[str, Any] = {"end_date": at, "error": None, "deliveries": 0}
    if held.next_method is not None:  # a resumed try: where it resumed is spent
        values.update(next_method=None, next_kwargs=None)
    match outcome:
        case Succeeded():
            events = _asset_events(held.task_spec, outcome)
            return Verdict(held, outcome, TI.SUCCESS, values, at, events)
        case Failed(error=error):
            values["error"] = error
            if not outcome.retryable or held.fence.try_number >= held.max_tries:
                return Verdict(held, outcome, TI.FAILED, values, at)
            values["next_retry_at"] = at + dt.timedelta(seconds=_retry_delay(held, outcome))
            return Verdict(held, outcome, TI.UP_FOR_RETRY, values, at)
        case Skipped(reason=reason):
            values["error"] = reason
            return Verdict(held, outcome, TI.SKIPPED, values, at)
        case Rescheduled(next_poke_at=next_poke_at):
            values["next_retry_at"] = next_poke_at or at
            return Verdict(held, outcome, TI.UP_FOR_RESCHEDULE, values, at)
        case Deferred():
            # The event is added to these when the trigger fires (state/engine/deferral.py).
            values["next_method"] = outcome.method_name
            values["next_kwargs"] = dict(outcome.method_kwargs)
            return Verdict(held, outcome, TI.DEFERRED, values, at)
        case AwaitingInput():
            # The answer is added to these when a person gives it (state/engine/hitl.py).
            values["next_method"] = outcome.method_name
            values["next_kwargs"] = {}
            return Verdict(held, outcome, TI.AWAITING_INPUT, values, at)


def _retry_delay(held: HeldTry, failed: Failed) -> float:
    if failed.retry_delay_seconds is not None:
        return failed.retry_delay_seconds  # the task's retry policy chose it for this failure
    return retry_delay_seconds(held.task_spec, held.fence.try_number)


def _asset_events(spec: TaskSpec, succeeded: Succeeded) -> tuple[OutletEvent, ...]:
    if not spec.outlets:
        return ()
    return events_of_success(spec.outlets, succeeded.asset_events)


def _end_through_outage(url: str, verdict: Verdict) -> Recorded:
    """``end_try``, waiting out an outage of the store.

    A connection lost after the server committed the end but before it said so looks like a
    failure: the next attempt is then refused (the try is no longer running), though the end
    recorded is this one. That refusal is read as recorded, with nothing more to queue (the
    scheduler queues what the end made ready).
    """
    attempts = 0

    def attempt() -> Recorded:
        nonlocal attempts
        attempts += 1
        recorded = end_try(url, verdict)
        if not recorded.recorded and attempts > 1 and _ended_as(url, verdict):
            return Recorded(True, [])
        return recorded

    return ride_out(attempt, Retry(f"recording the end of {verdict}", probe=store_probe(url)))


def _ended_as(url: str, verdict: Verdict) -> bool:
    """Whether the task instance holds this try's end already (its fence token, its state)."""
    fence = verdict.fence
    with statement_scope(url) as session:
        row = session.execute(
            select(_TI.c.state, _TI.c.try_number, _TI.c.fence_token).where(_TI.c.id == fence.ti_id)
        ).one_or_none()
    return row is not None and tuple(row) == (verdict.state, fence.try_number, fence.token)
