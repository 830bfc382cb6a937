"""Recording a try's end: the one executor of the plans ``state.end_plan`` makes.

A supervisor calls ``end_try`` once per try. It plans from the DAG's structure (parsed once per
version, ``state.scheduling.cached_dag``), records the end fenced by the try, and acts on the
plan: the slot handed over with the end (``state.hand_over.end_and_take``: one statement on
PostgreSQL, a short transaction on SQLite), or the end and a pass over the run in one
transaction. Whatever fails before the end is written leaves the end to be recorded alone: the
scheduler's loop guarantees progress, the plan only makes it sooner.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from state.db import get_engine, session_scope, statement_scope
from state.end_plan import FirstWaiting, FullPass, Plan, Successor, plan_end, plan_reschedule
from state.enums import TaskInstanceState
from state.hand_over import SlotTaker, end_and_take, first_waiting, lone_successor
from state.scheduling import Enqueue, cached_dag, pass_after_end
from state.transitions import Fence, transition_tis

log = logging.getLogger(__name__)
TI = TaskInstanceState


@dataclass(frozen=True)
class TryEnd:
    """A try's end as its supervisor records it: the try, its run, and what the end writes."""

    fence: Fence
    run_pk: int
    dag_id: str
    run_id: str
    task_id: str
    pool: str
    # The version of the DAG the run follows: the plan is made from that structure.
    version_hash: str | None
    state: TaskInstanceState
    values: Mapping[str, Any]
    # The moment of the end: a try queued in its slot is queued at that moment too.
    at: dt.datetime

    def __str__(self) -> str:
        return f"{self.dag_id}/{self.run_id}/{self.task_id} try {self.fence.try_number}"


class Recorded(NamedTuple):
    """Whether the end was recorded (False: the try no longer held its task instance), and the
    tries it queued, to publish now that they are committed."""

    recorded: bool
    enqueued: list[Enqueue]


def end_try(url: str, end: TryEnd) -> Recorded:
    """Record ``end`` and act on its plan; the plan's failure leaves the end recorded alone."""
    plan = _plan(end)
    try:
        return _carry_out(url, end, plan)
    except SQLAlchemyError:
        log.exception("recording the end of %s as %s failed; recording it alone", end, plan)
    with statement_scope(url) as session:
        return Recorded(record_end(session, end), [])


def _plan(end: TryEnd) -> Plan:
    """The plan, from the structure this process read of the run's version; before it has read
    that structure, a full pass (which reads it)."""
    dag = cached_dag(end.dag_id, end.version_hash) if end.version_hash else None
    if dag is None:
        return FullPass()
    if end.state == TI.UP_FOR_RESCHEDULE:
        return plan_reschedule()
    succeeded = end.state == TI.SUCCESS
    key = ("plan", end.task_id, succeeded)
    memo = dag.structure.memo
    if key not in memo:
        memo[key] = plan_end(dag.structure, end.task_id, succeeded)
    plan: Plan = memo[key]
    return plan


def _carry_out(url: str, end: TryEnd, plan: Plan) -> Recorded:
    if isinstance(plan, FullPass):
        with session_scope(url) as session:
            if not record_end(session, end):
                return Recorded(False, [])
            return Recorded(True, pass_after_end(session, end.run_pk, plan.successor))
    done = _hand_over(url, end, _taker(url, end, plan))
    if done.recorded and not done.enqueued and plan.then is not None:
        return Recorded(True, _pass_on_its_own(url, end, plan.then))
    return done


def _taker(url: str, end: TryEnd, plan: Successor | FirstWaiting) -> SlotTaker:
    if isinstance(plan, Successor):
        return lone_successor(end.dag_id, end.run_id, plan.task_id)
    # PostgreSQL compiles its statement once, and takes the list of tasks as one array.
    postgresql = get_engine(url).dialect.name == "postgresql"
    return first_waiting(end.dag_id, end.run_id, end.pool, plan.among, postgresql)


def _hand_over(url: str, end: TryEnd, taker: SlotTaker) -> Recorded:
    assert end.version_hash is not None  # planned from that version's structure
    with statement_scope(url) as session:
        recorded, rows = end_and_take(
            session,
            end.fence,
            (end.state, end.values),
            end.run_pk,
            taker,
            end.version_hash,
            end.at,
        )
    return Recorded(recorded, [Enqueue.of(row) for row in rows])


def _pass_on_its_own(url: str, end: TryEnd, plan: FullPass) -> list[Enqueue]:
    """The pass after an end recorded by its hand-over, in a transaction of its own: the end
    stands whatever happens to it."""
    try:
        with session_scope(url) as session:
            return pass_after_end(session, end.run_pk, plan.successor)
    except SQLAlchemyError:
        log.exception("the pass after the end of %s failed; the scheduler will make it", end)
        return []


def record_end(session: Session, end: TryEnd) -> bool:
    """Write the end, fenced by its try; False when the try no longer held the task instance."""
    moved = transition_tis(
        session, [end.fence.ti_id], [TI.RUNNING], end.state, end.values, end.fence
    )
    return moved == 1
