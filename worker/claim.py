"""Claiming a try (``queued -> running`` by compare-and-set) and recording how it ended."""

from __future__ import annotations

import datetime as dt
import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from broker_config import TaskInstanceMessage
from state.assets import OutletEvent, events_of_success
from state.db import statement_scope
from state.dialects import statements_of
from state.end import Recorded, TryEnd
from state.enums import TaskInstanceState
from state.liveness import count_redelivery, fail_overdelivered
from state.models import TI_TABLE, TaskInstance, utcnow
from state.outage import Retry, StoreUnavailable, ride_out, store_probe
from state.retries import retry_delay_seconds
from state.scheduling import dag_version
from state.structure import TaskSpec
from state.transitions import INCREMENT, Fence
from state.values import TIKey

TI = TaskInstanceState


@dataclass(frozen=True)
class Claim:
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

    @property
    def pool(self) -> str:
        return self.task_spec.pool

    def end(self, final: Final) -> TryEnd:
        """The try's end as ``state.end.end_try`` records it."""
        ti, now = self.ti, utcnow()
        return TryEnd(
            fence=self.fence,
            run_pk=self.run_pk,
            dag_id=ti.dag_id,
            run_id=ti.run_id,
            task_id=ti.task_id,
            pool=self.pool,
            version_hash=self.version_hash,
            state=final.state,
            values=end_values(self, final, now),
            at=now,
            asset_events=_asset_events(self.task_spec, final),
            map_index=ti.map_index,
            follow=final.follow,
        )


def _asset_events(spec: TaskSpec, final: Final) -> tuple[OutletEvent, ...]:
    if final.state != TI.SUCCESS or not spec.outlets:
        return ()
    return events_of_success(spec.outlets, final.asset_events)


def claim_try(
    session: Session, message: TaskInstanceMessage, max_deliveries: int | None = None
) -> Claim | str:
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
    if max_deliveries is not None and ti.deliveries > max_deliveries:
        return fail_overdelivered(session, ti.id, ti.try_number, ti.deliveries, max_deliveries)
    structure = dag_version(session, ti.dag_id, run.dag_version).structure
    return Claim(
        fence=Fence(ti.id, message.try_number, token),
        ti=TIKey(ti.dag_id, ti.run_id, ti.task_id, ti.map_index),
        run_pk=run.run_pk,
        max_tries=ti.max_tries,
        generation=ti.generation,
        fileloc=run.fileloc,
        task_spec=structure.tasks.get(ti.task_id, _NOT_IN_VERSION),
        version_hash=run.run_version,
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


_HOSTNAME = socket.gethostname()
# A task the DAG's stored version lacks: its try fails at ``find_task``, with the defaults here.
_NOT_IN_VERSION = TaskSpec()
_TI = TI_TABLE


def _claim(
    session: Session, message: TaskInstanceMessage, values: dict[str, Any]
) -> tuple[Any, Any] | None:
    """The claimed row and its run's, or None when the compare-and-set lost."""
    return statements_of(session).claim(session, message.ti_id, message.try_number, values)


def _why_not_claimed(
    session: Session, message: TaskInstanceMessage, max_deliveries: int | None
) -> str:
    deliveries = count_redelivery(session, message.ti_id, message.try_number)
    if deliveries is not None and max_deliveries is not None and deliveries > max_deliveries:
        return fail_overdelivered(
            session, message.ti_id, message.try_number, deliveries, max_deliveries
        )
    ti = session.get(TaskInstance, message.ti_id)
    if ti is None:
        return f"unknown task instance {message.ti_id}"
    return f"stale or duplicate: task instance is {ti.state} at try {ti.try_number}"


@dataclass(frozen=True)
class Final:
    """How a try ended, as the supervisor will record it."""

    state: TaskInstanceState
    error: str | None = None
    # A retry policy's delay for this failure; None: the task's retry_delay (and backoff).
    retry_delay_seconds: float | None = None
    # A success's extras and alias resolutions for its outlets, as the task sent them.
    asset_events: tuple[dict[str, Any], ...] = ()
    # What a branch or a short circuit chose (recorded with the end: state.end_plan).
    follow: tuple[str, ...] | None = None
    # A sensor's try rescheduled: when its next poke is due (the try stays the same).
    next_poke_at: dt.datetime | None = None


def final_for_failure(
    claim: Claim, error: str, retryable: bool, retry_delay_seconds: float | None = None
) -> Final:
    """``up_for_retry`` when tries are left and the failure allows it, else ``failed``."""
    if retryable and claim.fence.try_number < claim.max_tries:
        return Final(TI.UP_FOR_RETRY, error, retry_delay_seconds)
    return Final(TI.FAILED, error)


def end_values(claim: Claim, final: Final, now: dt.datetime) -> dict[str, Any]:
    """What recording the end writes besides the state."""
    # A supervisor lived to record this end: the delivery count starts over (see claim_try).
    values: dict[str, Any] = {"end_date": now, "error": final.error, "deliveries": 0}
    if final.state == TI.UP_FOR_RETRY:
        delay = final.retry_delay_seconds
        if delay is None:
            delay = retry_delay_seconds(claim.task_spec, claim.fence.try_number)
        values["next_retry_at"] = now + dt.timedelta(seconds=delay)
    if final.state == TI.UP_FOR_RESCHEDULE:
        values["next_retry_at"] = final.next_poke_at or now
    return values


class ClaimUnavailable(StoreUnavailable):
    """The claim could not reach the store in time: its message must go back, not be dropped."""


def claim_through_outage(
    url: str, message: TaskInstanceMessage, max_deliveries: int | None = None
) -> Claim | str:
    """``claim_try`` in a statement of its own, waiting out an outage of the store.

    A claim that never reached the store consumed nothing: past the bound, ``ClaimUnavailable``
    tells the Celery task to give the message back (worker/celery_app.py).
    """

    def claim() -> Claim | str:
        with statement_scope(url) as session:
            return claim_try(session, message, max_deliveries)

    retry = Retry(f"claiming {message.describe()}", probe=store_probe(url))
    try:
        return ride_out(claim, retry)
    except StoreUnavailable as error:
        raise ClaimUnavailable(str(error)) from error


def end_through_outage(
    url: str, claim: Claim, final: Final, end: Callable[[], Recorded]
) -> Recorded:
    """``end()`` (recording the try's end, ``state.end.end_try``), waiting out an outage.

    A connection lost after the server committed the end but before it said so looks like a
    failure: the next attempt is then refused (the try is no longer running), though the end
    recorded is this one. That refusal is read as recorded, with nothing more to queue (the
    scheduler queues what the end made ready).
    """
    attempts = 0

    def attempt() -> Recorded:
        nonlocal attempts
        attempts += 1
        recorded = end()
        if not recorded.recorded and attempts > 1 and _ended_as(url, claim, final):
            return Recorded(True, [])
        return recorded

    ti = claim.ti
    what = f"recording the end of {ti.dag_id}/{ti.run_id}/{ti.task_id} try {claim.fence.try_number}"
    return ride_out(attempt, Retry(what, probe=store_probe(url)))


def _ended_as(url: str, claim: Claim, final: Final) -> bool:
    """Whether the task instance holds this try's end already (its fence token, its state)."""
    fence = claim.fence
    with statement_scope(url) as session:
        row = session.execute(
            select(_TI.c.state, _TI.c.try_number, _TI.c.fence_token).where(_TI.c.id == fence.ti_id)
        ).one_or_none()
    return row is not None and tuple(row) == (final.state, fence.try_number, fence.token)
