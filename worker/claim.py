"""Claiming a try (``queued -> running`` by compare-and-set) and recording how it ended."""

from __future__ import annotations

import datetime as dt
import os
import socket
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from broker_config import TaskInstanceMessage
from state.enums import TaskInstanceState
from state.liveness import count_redelivery, fail_overdelivered
from state.models import DagModel, DagRun, TaskInstance, utcnow
from state.transitions import Fence, transition_tis, transition_tis_returning
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
    task_spec: dict[str, Any]
    run: dict[str, Any]


def claim_try(
    session: Session, message: TaskInstanceMessage, max_deliveries: int | None = None
) -> Claim | str:
    """Claim ``message``'s try; on a lost race, a one-line reason to drop the message.

    Every delivery is counted in SQL, a dropped copy of a running try's message included; past
    ``max_deliveries`` with no try ending, the try is failed (a task that kills its worker).
    """
    token = uuid.uuid4().hex
    values = {
        "fence_token": token,
        "hostname": socket.gethostname(),
        "pid": os.getpid(),
        "start_date": utcnow(),
        "last_heartbeat": utcnow(),
        "end_date": None,
        "deliveries": TaskInstance.deliveries + 1,
    }
    claimed = transition_tis_returning(
        session, [message.ti_id], [TI.QUEUED], TI.RUNNING, values, try_number=message.try_number
    )
    if not claimed:
        return _why_not_claimed(session, message, max_deliveries)
    ti = claimed[0]
    if max_deliveries is not None and ti.deliveries > max_deliveries:
        return fail_overdelivered(session, ti.id, ti.try_number, ti.deliveries, max_deliveries)
    # Only this task's slice of the DAG's structure: a large DAG's JSON is hundreds of KiB.
    row = session.execute(
        select(
            DagRun.id,
            DagRun.conf,
            DagRun.run_type,
            DagRun.logical_date,
            DagRun.data_interval_start,
            DagRun.data_interval_end,
            DagModel.fileloc,
            DagModel.structure[("tasks", ti.task_id)].label("task_spec"),
            DagModel.structure["params"].label("params"),
        )
        .join(DagModel, DagModel.dag_id == DagRun.dag_id)
        .where(DagRun.dag_id == ti.dag_id, DagRun.run_id == ti.run_id)
    ).one()
    return Claim(
        fence=Fence(ti.id, message.try_number, token),
        ti=TIKey(ti.dag_id, ti.run_id, ti.task_id, ti.map_index),
        run_pk=row.id,
        max_tries=ti.max_tries,
        generation=ti.generation,
        fileloc=row.fileloc,
        task_spec=row.task_spec or {},
        run={
            "params": {**(row.params or {}), **(row.conf or {})},
            "run_type": row.run_type,
            "logical_date": row.logical_date,
            "data_interval_start": row.data_interval_start,
            "data_interval_end": row.data_interval_end,
        },
    )


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


def final_for_failure(claim: Claim, error: str, retryable: bool) -> Final:
    """``up_for_retry`` when tries are left and the failure allows it, else ``failed``."""
    if retryable and claim.fence.try_number < claim.max_tries:
        return Final(TI.UP_FOR_RETRY, error)
    return Final(TI.FAILED, error)


def record_final(session: Session, claim: Claim, final: Final) -> bool:
    """Write the end of the try, fenced; False when the try no longer held the task instance."""
    now = utcnow()
    # A supervisor lived to record this end: the delivery count starts over (see claim_try).
    values: dict[str, Any] = {"end_date": now, "error": final.error, "deliveries": 0}
    if final.state == TI.UP_FOR_RETRY:
        delay = float(claim.task_spec.get("retry_delay_seconds", 0))
        values["next_retry_at"] = now + dt.timedelta(seconds=delay)
    moved = transition_tis(
        session, [claim.fence.ti_id], [TI.RUNNING], final.state, values, claim.fence
    )
    return moved == 1
