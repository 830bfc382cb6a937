"""Claiming a try (``queued -> running`` by compare-and-set) and recording how it ended."""

from __future__ import annotations

import datetime as dt
import os
import socket
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from broker_config import TaskInstanceMessage
from state.enums import TaskInstanceState
from state.models import DagModel, DagRun, TaskInstance, utcnow
from state.transitions import Fence, transition_tis
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


def claim_try(session: Session, message: TaskInstanceMessage) -> Claim | str:
    """Claim ``message``'s try; on a lost race, a one-line reason to drop the message."""
    ti = session.get(TaskInstance, message.ti_id)
    if ti is None:
        return f"unknown task instance {message.ti_id}"
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
    moved = transition_tis(
        session, [ti.id], [TI.QUEUED], TI.RUNNING, values, try_number=message.try_number
    )
    if moved != 1:
        return f"stale or duplicate: task instance is {ti.state} at try {ti.try_number}"
    run = session.query(DagRun).filter_by(dag_id=ti.dag_id, run_id=ti.run_id).one()
    dag_model = session.get(DagModel, ti.dag_id)
    if dag_model is None:
        return f"DAG {ti.dag_id!r} is not in the store"
    return Claim(
        fence=Fence(ti.id, message.try_number, token),
        ti=TIKey(ti.dag_id, ti.run_id, ti.task_id, ti.map_index),
        run_pk=run.id,
        max_tries=ti.max_tries,
        generation=ti.generation,
        fileloc=dag_model.fileloc,
        task_spec=dag_model.structure["tasks"].get(ti.task_id, {}),
        run={
            "params": {**dag_model.structure.get("params", {}), **(run.conf or {})},
            "run_type": run.run_type,
            "logical_date": run.logical_date,
            "data_interval_start": run.data_interval_start,
            "data_interval_end": run.data_interval_end,
        },
    )


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
    values: dict[str, Any] = {"end_date": now, "error": final.error}
    if final.state == TI.UP_FOR_RETRY:
        delay = float(claim.task_spec.get("retry_delay_seconds", 0))
        values["next_retry_at"] = now + dt.timedelta(seconds=delay)
    moved = transition_tis(
        session, [claim.fence.ti_id], [TI.RUNNING], final.state, values, claim.fence
    )
    return moved == 1
