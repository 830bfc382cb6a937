"""Finding tries that stopped making progress: zombies and queued messages that never started."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from state.enums import TaskInstanceState
from state.models import DagModel, TaskInstance
from state.transitions import Fence, transition_tis, transition_tis_returning

TI = TaskInstanceState


def find_zombies(session: Session, cutoff: dt.datetime) -> list[TaskInstance]:
    query = select(TaskInstance).where(
        TaskInstance.state == TI.RUNNING, TaskInstance.last_heartbeat < cutoff
    )
    return list(session.scalars(query))


def give_up_try(
    session: Session, ti: TaskInstance, error: str, now: dt.datetime, tasks: Mapping[str, Any]
) -> TaskInstanceState | None:
    """End a running try the supervisor cannot end (retry if tries are left); None if it moved."""
    spec = tasks.get(ti.task_id, {})
    retry = ti.try_number < ti.max_tries
    target = TI.UP_FOR_RETRY if retry else TI.FAILED
    values: dict[str, Any] = {"end_date": now, "error": error}
    if retry:
        values["next_retry_at"] = now + dt.timedelta(
            seconds=float(spec.get("retry_delay_seconds", 0))
        )
    fence = Fence(ti.id, ti.try_number, ti.fence_token or "")
    moved = transition_tis(session, [ti.id], [TI.RUNNING], target, values, fence)
    return target if moved else None


def find_stalled_queued(session: Session, cutoff: dt.datetime) -> list[TaskInstance]:
    query = select(TaskInstance).where(
        TaskInstance.state == TI.QUEUED, TaskInstance.queued_at < cutoff
    )
    return list(session.scalars(query))


def resend_queued(session: Session, ti: TaskInstance, now: dt.datetime) -> list[TaskInstance]:
    """Count one more send of the same try (no try consumed); the rows to publish again."""
    values = {"queued_at": now, "queued_resends": TaskInstance.queued_resends + 1}
    return transition_tis_returning(
        session, [ti.id], [TI.QUEUED], TI.QUEUED, values, try_number=ti.try_number
    )


def fail_queued(session: Session, ti: TaskInstance, error: str, now: dt.datetime) -> bool:
    values = {"end_date": now, "error": error}
    moved = transition_tis(
        session, [ti.id], [TI.QUEUED], TI.FAILED, values, try_number=ti.try_number
    )
    return moved == 1


def dag_tasks(session: Session, dag_id: str) -> Mapping[str, Any]:
    model = session.get(DagModel, dag_id)
    return model.structure["tasks"] if model else {}
