"""Recording a try's end: the one executor of the plans ``state.engine.end_plan`` makes.

``state.engine.try_life.record`` calls ``end_try`` once per try, with its ``Verdict`` on how the try
ended. It plans from the DAG's structure (parsed once per version,
``state.engine.scheduling.cached_dag``), records the end fenced by the try, and acts on the plan:
the slot handed over with the end (the dialect's ``end_and_take``: one statement on
PostgreSQL, a short transaction on SQLite), or the end and a pass over the run in one transaction.
Whatever fails before the end is written leaves the end to be recorded alone: the scheduler's loop
guarantees progress, the plan only makes it sooner. A branch's choice is the exception: the tasks it
skips are part of its end, recorded with it or not at all.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlalchemy import bindparam, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from state.core import (
    TI_TABLE,
    Chosen,
    Fence,
    FirstInPool,
    NextByName,
    SlotTaker,
    TaskInstanceState,
    session_scope,
    statement_scope,
    statements_of,
    ti_move,
    transition_tis,
)
from state.engine.deferral import add_trigger
from state.engine.end_plan import (
    FirstWaiting,
    FullPass,
    Plan,
    SkipDownstream,
    Successor,
    plan_end,
    plan_reschedule,
)
from state.engine.hitl import ask
from state.engine.outcomes import AwaitingInput, Deferred, Outcome, Succeeded
from state.engine.scheduling import CachedDag, Enqueue, cached_dag, dag_version, pass_after_end
from state.records import EventSource, OutletEvent, keep_try, record_events

if TYPE_CHECKING:
    from state.engine.try_life import HeldTry

log = logging.getLogger(__name__)
TI = TaskInstanceState


@dataclass(frozen=True, slots=True)
class Verdict:
    """A held try's end as the store judged it (``state.engine.try_life.judge``): the try, what it
    said, the state it ends in and what the end writes besides it."""

    held: HeldTry
    outcome: Outcome
    state: TaskInstanceState
    values: Mapping[str, Any]
    # The moment of the end: a try queued in its slot is queued at that moment too.
    at: dt.datetime
    # The assets a success updated (state/records/assets.py): written with the end, fenced by the
    # try.
    asset_events: tuple[OutletEvent, ...] = ()

    # What the executor reads of the try and its run, read where they are kept.
    @property
    def fence(self) -> Fence:
        return self.held.fence

    @property
    def run_pk(self) -> int:
        return self.held.run_pk

    @property
    def dag_id(self) -> str:
        return self.held.ti.dag_id

    @property
    def run_id(self) -> str:
        return self.held.ti.run_id

    @property
    def task_id(self) -> str:
        return self.held.ti.task_id

    @property
    def map_index(self) -> int:
        return self.held.ti.map_index

    @property
    def pool(self) -> str:
        return self.held.task_spec.pool

    @property
    def version_hash(self) -> str | None:
        """The version of the DAG the run follows: the plan is made from that structure."""
        return self.held.version_hash

    @property
    def follow(self) -> tuple[str, ...] | None:
        """What a branch or a short circuit chose to follow (None for any other end)."""
        return self.outcome.follow if isinstance(self.outcome, Succeeded) else None

    def __str__(self) -> str:
        return f"{self.dag_id}/{self.run_id}/{self.task_id} try {self.fence.try_number}"


class Recorded(NamedTuple):
    """Whether the end was recorded (False: the try no longer held its task instance), and the
    tries it queued, to publish now that they are committed."""

    recorded: bool
    enqueued: list[Enqueue]


def end_try(url: str, end: Verdict) -> Recorded:
    """Record ``end`` and act on its plan; the plan's failure leaves the end recorded alone."""
    plan = _plan(url, end)
    try:
        return _carry_out(url, end, plan)
    except SQLAlchemyError:
        log.exception("recording the end of %s as %s failed; recording it alone", end, plan)
    with session_scope(url) as session:
        recorded = record_end(session, end)
        if recorded and isinstance(plan, SkipDownstream):
            skip_tasks(session, end, plan.skip)
        return Recorded(recorded, [])


def _plan(url: str, end: Verdict) -> Plan:
    """The plan, from the structure this process read of the run's version; before it has read
    that structure, a full pass (which reads it), unless a branch chose: its skips need it."""
    dag = cached_dag(end.dag_id, end.version_hash) if end.version_hash else None
    if dag is None and end.follow is not None and end.version_hash:
        dag = _read_dag(url, end.dag_id, end.version_hash)
    if dag is None or end.state == TI.UP_FOR_RETRY:
        # A retried try is copied to the history with its end (record_end): a session's
        # transaction, not the hand-over's one statement. Retries are rare; ends are not.
        return FullPass()
    if end.state == TI.UP_FOR_RESCHEDULE:
        return plan_reschedule(dag.structure)
    if end.state in (TI.DEFERRED, TI.AWAITING_INPUT):
        # The trigger's or the question's row is written with the end (record_end): a pass,
        # in one transaction.
        return FullPass()
    succeeded, events = end.state == TI.SUCCESS, bool(end.asset_events)
    key = ("plan", end.task_id, succeeded, end.follow, events)
    memo = dag.structure.memo
    if key not in memo:
        memo[key] = plan_end(dag.structure, end.task_id, succeeded, end.follow, events)
    plan: Plan = memo[key]
    return plan


def _read_dag(url: str, dag_id: str, version_hash: str) -> CachedDag | None:
    with statement_scope(url) as session:
        dag = dag_version(session, dag_id, version_hash)
    return dag if dag.version_hash == version_hash else None


def _carry_out(url: str, end: Verdict, plan: Plan) -> Recorded:
    if isinstance(plan, SkipDownstream):
        with session_scope(url) as session:
            if not record_end(session, end):
                return Recorded(False, [])
            skip_tasks(session, end, plan.skip)
            return Recorded(True, pass_after_end(session, end.run_pk))
    if isinstance(plan, FullPass):
        with session_scope(url) as session:
            if not record_end(session, end):
                return Recorded(False, [])
            return Recorded(True, pass_after_end(session, end.run_pk, plan.successor))
    done = _hand_over(url, end, _taker(end, plan))
    if done.recorded and not done.enqueued and plan.then is not None:
        return Recorded(True, _pass_on_its_own(url, end, plan.then))
    return done


def _taker(end: Verdict, plan: Successor | FirstWaiting) -> SlotTaker:
    """The one successor by name, still ``none`` (unless tries of the run wait for slots: the
    full pass queues those first); or the run's first try waiting in ``scheduled`` for a slot of
    the ended try's pool, with ``among`` the first of a try of one of those tasks."""
    if isinstance(plan, Successor):
        return NextByName(end.dag_id, end.run_id, plan.task_id)
    return FirstInPool(end.dag_id, end.run_id, end.pool, plan.among)


def _hand_over(url: str, end: Verdict, taker: SlotTaker) -> Recorded:
    """Record the end and queue ``taker`` in its slot, in the dialect's SQL: one statement on
    PostgreSQL (a chain's hop pays one round trip, not five), a short transaction on SQLite.
    Nothing is queued unless the run is running at the version the plan was made from and its
    DAG is at that version and not paused (docs/decisions/one-end-path.md)."""
    assert end.version_hash is not None  # planned from that version's structure
    with statement_scope(url) as session:
        recorded, rows = statements_of(session).end_and_take(
            session,
            end.fence,
            (end.state, end.values),
            end.run_pk,
            taker,
            end.version_hash,
            end.at,
        )
    return Recorded(recorded, [Enqueue.of(row) for row in rows])


def _pass_on_its_own(url: str, end: Verdict, plan: FullPass) -> list[Enqueue]:
    """The pass after an end recorded by its hand-over, in a transaction of its own: the end
    stands whatever happens to it."""
    try:
        with session_scope(url) as session:
            return pass_after_end(session, end.run_pk, plan.successor)
    except SQLAlchemyError:
        log.exception("the pass after the end of %s failed; the scheduler will make it", end)
        return []


def record_end(session: Session, end: Verdict) -> bool:
    """Write the end, fenced by its try; False when the try no longer held the task instance."""
    moved = transition_tis(
        session, [end.fence.ti_id], [TI.RUNNING], end.state, end.values, end.fence
    )
    if moved == 1 and end.asset_events:
        source = EventSource(end.dag_id, end.run_id, end.task_id, end.map_index)
        record_events(session, source, end.asset_events, end.at)
    if moved == 1 and end.state == TI.UP_FOR_RETRY:
        keep_try(session, end.fence.ti_id, end.fence.try_number, TI.FAILED)
    if moved == 1 and isinstance(end.outcome, Deferred):
        add_trigger(session, end.fence.ti_id, end.fence.try_number, end.outcome, end.at)
    if moved == 1 and isinstance(end.outcome, AwaitingInput):
        question, timeout = end.outcome.question, end.outcome.timeout_seconds
        ask(session, end.fence.ti_id, end.fence.try_number, question, timeout, end.at)
    return moved == 1


_TI = TI_TABLE
# The run's task instances of the tasks a branch skips: one statement whatever their number.
_OF_TASKS = select(_TI.c.id).where(
    _TI.c.dag_id == bindparam("of_dag"),
    _TI.c.run_id == bindparam("of_run"),
    _TI.c.task_id.in_(bindparam("skipped", expanding=True)),
)


def skip_tasks(session: Session, end: Verdict, task_ids: tuple[str, ...]) -> None:
    """``none -> skipped`` for the task instances of ``task_ids`` in the ended try's run."""
    if not task_ids:
        return
    params = {"of_dag": end.dag_id, "of_run": end.run_id, "skipped": list(task_ids)}
    statement, values = ti_move(
        Chosen(_OF_TASKS, params), [TI.NONE], TI.SKIPPED, {"end_date": end.at}
    )
    session.execute(statement, values)
