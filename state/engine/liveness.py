"""Tries that stopped making progress: zombies, queued messages that never started, and messages
whose task keeps killing the worker that runs it.

Finders lock what they return (``FOR UPDATE SKIP LOCKED``): two schedulers sweeping at once
split the rows between them instead of both re-sending one message or both reaping one zombie.
Every move is conditional on the try it ends, so a sweep that lost a race moves nothing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Row, select, update
from sqlalchemy.orm import Session

from state.core import (
    INCREMENT,
    DagModel,
    Fence,
    TaskInstance,
    TaskInstanceState,
    TaskSpec,
    structure_of,
    transition_tis,
    transition_tis_returning,
    utcnow,
)
from state.engine.retries import retry_delay_seconds
from state.records import keep_try

TI = TaskInstanceState


def find_zombies(session: Session, cutoff: dt.datetime) -> list[TaskInstance]:
    """Running tries whose supervisor has not heartbeated since ``cutoff``."""
    query = select(TaskInstance).where(
        TaskInstance.state == TI.RUNNING, TaskInstance.last_heartbeat < cutoff
    )
    return list(session.scalars(query.with_for_update(skip_locked=True)))


def give_up_try(
    session: Session, ti: TaskInstance, error: str, now: dt.datetime, tasks: Mapping[str, TaskSpec]
) -> TaskInstanceState | None:
    """End a running try the supervisor cannot end (retry if tries are left); None if it moved."""
    spec = tasks.get(ti.task_id)
    retry = ti.try_number < ti.max_tries
    target = TI.UP_FOR_RETRY if retry else TI.FAILED
    values: dict[str, Any] = {"end_date": now, "error": error}
    if retry:
        delay = retry_delay_seconds(spec, ti.try_number) if spec else 0.0
        values["next_retry_at"] = now + dt.timedelta(seconds=delay)
    fence = Fence(ti.id, ti.try_number, ti.fence_token or "")
    moved = transition_tis(session, [ti.id], [TI.RUNNING], target, values, fence)
    if moved and retry:
        keep_try(session, ti.id, ti.try_number, TI.FAILED)  # the next try overwrites the row
    return target if moved else None


def find_stalled_queued(session: Session, cutoff: dt.datetime) -> list[TaskInstance]:
    """Queued tries whose message was last sent before ``cutoff`` and never claimed."""
    query = select(TaskInstance).where(
        TaskInstance.state == TI.QUEUED, TaskInstance.queued_at < cutoff
    )
    return list(session.scalars(query.with_for_update(skip_locked=True)))


def resend_queued(session: Session, ti: TaskInstance, now: dt.datetime) -> Sequence[Row[Any]]:
    """Count one more send of the same try (no try consumed); the rows to publish again."""
    values = {"queued_at": now, "queued_resends": INCREMENT}
    return transition_tis_returning(
        session, [ti.id], [TI.QUEUED], TI.QUEUED, values, try_number=ti.try_number
    )


def fail_queued(session: Session, ti: TaskInstance, error: str, now: dt.datetime) -> bool:
    values = {"end_date": now, "error": error}
    moved = transition_tis(
        session, [ti.id], [TI.QUEUED], TI.FAILED, values, try_number=ti.try_number
    )
    return moved == 1


def count_redelivery(session: Session, ti_id: int, try_number: int) -> int | None:
    """Count a delivery of a try that is already running; the count, or None if it is not.

    Celery delivers a late-acknowledged message again when the worker running it died
    (``task_reject_on_worker_lost``); the claim drops the copy, and this counts it. The count
    goes on across tries until a supervisor records the end of one (state/engine/try_life.py).
    """
    statement = (
        update(TaskInstance)
        .where(
            TaskInstance.id == ti_id,
            TaskInstance.try_number == try_number,
            TaskInstance.state == TI.RUNNING,
        )
        .values(deliveries=TaskInstance.deliveries + 1)
        .returning(TaskInstance.deliveries)
        .execution_options(synchronize_session=False)
    )
    return session.scalar(statement)


def fail_overdelivered(
    session: Session, ti_id: int, try_number: int, deliveries: int, max_deliveries: int
) -> str:
    """Fail a try whose messages keep being delivered with no try ever ending; the reason."""
    error = (
        f"delivered {deliveries} times without a try ending (max_deliveries={max_deliveries}): "
        "its task keeps killing the worker that runs it"
    )
    values = {"end_date": utcnow(), "error": error, "fence_token": None}
    transition_tis(
        session, [ti_id], [TI.QUEUED, TI.RUNNING], TI.FAILED, values, try_number=try_number
    )
    return error


def dag_tasks(session: Session, dag_id: str) -> Mapping[str, TaskSpec]:
    model = session.get(DagModel, dag_id)
    return structure_of(model).tasks if model else {}
