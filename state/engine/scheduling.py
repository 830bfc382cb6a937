"""Scheduling one DAG run: decide, queue and settle it, in a constant number of statements.

Used by the scheduler loop and by a supervisor whose try just ended (so a chain does not wait
for the next loop). The run row is locked first (the dialect's ``try_lock_run``: ``FOR UPDATE
SKIP LOCKED`` on PostgreSQL): whoever holds it schedules the run, anyone else moves on, and no
try is ever queued twice.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import Row, bindparam, or_, select
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from state.core import (
    FINISHED,
    TI_TABLE,
    WAITING_FOR_TIME,
    DagModel,
    DagRun,
    DagRunState,
    DagStructure,
    Increment,
    TaskInstance,
    TaskInstanceState,
    TaskSpec,
    observe_metric,
    outranked,
    parse_structure,
    statements_of,
    transition_run,
    transition_tis,
    utcnow,
)
from state.engine.backfills import BACKFILL, holds_back
from state.engine.mapping import expand_mapped
from state.engine.past import hold_for_past
from state.engine.pools import may_start_run
from state.engine.readiness import TIRow, evaluate, run_outcome
from state.engine.run_life import stop_the_rest
from state.engine.runs import mark_run_started, verify_integrity
from state.engine.slot_order import choose_ready

TI = TaskInstanceState


@dataclass(frozen=True)
class Enqueue:
    """A try queued in SQL, to be published on the broker once the transaction commits."""

    ti_id: int
    try_number: int
    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    queue: str

    @classmethod
    def of(cls, ti: TaskInstance | Row[Any]) -> Enqueue:
        """The try a task instance row holds, as it stands after being queued."""
        return cls(ti.id, ti.try_number, ti.dag_id, ti.run_id, ti.task_id, ti.map_index, ti.queue)


@dataclass(frozen=True)
class CachedDag:
    """A DAG at one version, as a pass reads it: its file and its parsed structure."""

    dag_id: str
    fileloc: str
    version_hash: str | None
    structure: DagStructure

    @classmethod
    def of(cls, model: DagModel) -> CachedDag:
        structure = parse_structure(model.structure, model.version_hash)
        return cls(model.dag_id, model.fileloc, model.version_hash, structure)


_TI = TI_TABLE
# The next poke of a rescheduled sensor keeps its try number: queuing adds the one taken here.
SAME_TRY = Increment(-1)
_RUN_ROWS = select(
    *(_TI.c[name] for name in ("id", "task_id", "state", "next_retry_at", "pool")),
    _TI.c.priority_weight,
    _TI.c.pool_slots,
).where(_TI.c.dag_id == bindparam("dag_id"), _TI.c.run_id == bindparam("run_id"))


def schedule_run(
    session: Session,
    run: DagRun,
    dag: CachedDag,
    now: dt.datetime | None = None,
    defer: bool = False,
) -> list[Enqueue]:
    """One pass over one locked run; returns the tries to publish after commit. ``defer``: a
    try of another run waiting for a slot with a higher weight takes it first (a supervisor's
    pass; the scheduler's loop passes over the runs by weight instead)."""
    now = now or utcnow()
    structure = dag.structure
    if run.version_hash != dag.version_hash:
        verify_integrity(session, run, structure, dag.version_hash)
    # A queued run may start only under max_active_runs; it then holds the DAG's lock. A
    # backfill's run waits too while its backfill is paused or at its own max_active_runs.
    if run.state == DagRunState.QUEUED and not _may_start(session, run, structure):
        return []
    rows = session.execute(_RUN_ROWS, {"dag_id": run.dag_id, "run_id": run.run_id}).all()
    states = {row.id: TI(row.state) for row in rows}
    _remove_gone(session, structure, rows, states)
    if structure.fail_fast:
        stop_the_rest(session, structure, rows, states, now)
    _apply_decisions(session, run, structure, rows, states, now)
    _schedule_due(session, rows, states, now)
    enqueued = _queue_scheduled(session, run, structure, rows, states, now, defer)
    if enqueued:
        mark_run_started(session, run)
    settle_run(session, run, *_deciding(structure, rows, states), now)
    return enqueued


def _may_start(session: Session, run: DagRun, structure: DagStructure) -> bool:
    if run.run_type == BACKFILL and holds_back(session, run):
        return False
    return may_start_run(session, run.dag_id, structure.max_active_runs)


def _deciding(
    structure: DagStructure, rows: Any, states: Mapping[int, TaskInstanceState]
) -> tuple[list[TaskInstanceState], list[TaskInstanceState]]:
    """The run's states that decide its outcome, and those of teardowns that do not."""
    tasks = structure.tasks
    aside = {r.id for r in rows if r.task_id in tasks and not tasks[r.task_id].decides_run}
    deciding = [state for ti_id, state in states.items() if ti_id not in aside]
    return deciding, [states[ti_id] for ti_id in aside]


def _schedule_due(
    session: Session, rows: Any, states: dict[int, TaskInstanceState], now: dt.datetime
) -> None:
    """Tries whose ``next_retry_at`` has passed go back to ``scheduled``.

    A retry is a new try: queuing adds one to the try number. A sensor's next poke is the same
    try, so its try number is lowered by one here and queuing brings it back (DESIGN.md §4).
    """
    for waiting in sorted(WAITING_FOR_TIME):
        due = [
            r.id for r in rows if r.state == waiting and r.next_retry_at and r.next_retry_at <= now
        ]
        values = {"try_number": SAME_TRY} if waiting == TI.UP_FOR_RESCHEDULE else None
        if transition_tis(session, due, [waiting], TI.SCHEDULED, values):
            states.update(dict.fromkeys(due, TI.SCHEDULED))


def _apply_decisions(
    session: Session,
    run: DagRun,
    structure: DagStructure,
    rows: Any,
    states: dict[int, TaskInstanceState],
    now: dt.datetime,
) -> None:
    # ``states``, not the rows read: fail_fast may have finished some since.
    decisions = evaluate(structure, [TIRow(r.id, r.task_id, states[r.id]) for r in rows])
    decisions.schedule = hold_for_past(session, run, structure, rows, decisions.schedule)
    expand_mapped(session, structure, rows, decisions)  # .expand / .batch: state/engine/mapping.py
    for target in (TI.SCHEDULED, TI.UPSTREAM_FAILED, TI.SKIPPED):
        ids = decisions.target(target)
        values = {"end_date": now} if target in FINISHED else None
        transition_tis(session, ids, [TI.NONE], target, values)
        states.update(dict.fromkeys(ids, target))


def _remove_gone(
    session: Session, structure: DagStructure, rows: Any, states: dict[int, TaskInstanceState]
) -> None:
    """Tasks no longer in the DAG that have nothing left to do (or a retry to come) are removed.

    ``verify_integrity`` leaves a queued or running try alone; once it ends in ``up_for_retry``
    it must not be retried into a task the DAG no longer has.
    """
    tasks = structure.tasks
    waiting = (TI.NONE, TI.SCHEDULED, *WAITING_FOR_TIME)
    gone = [r for r in rows if r.task_id not in tasks and r.state in waiting]
    from_states = {TI(r.state) for r in gone}
    ids = [r.id for r in gone]
    if transition_tis(session, ids, from_states, TI.REMOVED):
        states.update(dict.fromkeys(ids, TI.REMOVED))


def _queue_scheduled(
    session: Session,
    run: DagRun,
    structure: DagStructure,
    rows: Sequence[Any],
    states: dict[int, TaskInstanceState],
    now: dt.datetime,
    defer: bool,
) -> list[Enqueue]:
    """``scheduled -> queued`` by weight, within every limit (``state.engine.slot_order``);
    each queue starts a try."""
    ready = choose_ready(session, (run.dag_id, run.run_id), structure, rows, states, defer)
    queued = _queue(session, ready, now)
    states.update(dict.fromkeys((ti.id for ti in queued), TI.QUEUED))
    return [Enqueue.of(ti) for ti in queued]


def _queue(session: Session, ti_ids: list[int], now: dt.datetime) -> Sequence[Row[Any]]:
    """``scheduled -> queued``: each queue starts a try."""
    return statements_of(session).queue(session, ti_ids, now)


def settle_run(
    session: Session,
    run: DagRun,
    states: list[TaskInstanceState],
    not_deciding: list[TaskInstanceState],
    now: dt.datetime,
) -> None:
    """Derive the run's state from its task instances: finished only when all of them are
    (``not_deciding``: teardowns', which the run waits for but whose failure does not fail it)."""
    outcome = run_outcome(states, not_deciding)
    if outcome is None or run.state not in (DagRunState.QUEUED, DagRunState.RUNNING):
        return
    if outcome == DagRunState.SUCCESS:
        mark_run_started(session, run)  # a run succeeds from running only
    target = DagRunState(outcome)
    if transition_run(session, run.id, [DagRunState(run.state)], target, {"end_date": now}):
        # The mapped object learns the new state as committed: set as an attribute, it would
        # make the flush write the state a second time, around the transition table.
        set_committed_value(run, "state", target)
        if run.start_date is not None:  # a run that never started has no duration
            took = (now - run.start_date).total_seconds()
            observe_metric("dagrun_duration_seconds", max(0.0, took), state=str(target))


def schedule_run_by_pk(session: Session, run_pk: int) -> list[Enqueue]:
    """Lock and schedule one run, if nobody else holds it."""
    return try_schedule_run(session, run_pk) or []


def try_schedule_run(session: Session, run_pk: int) -> list[Enqueue] | None:
    """As ``schedule_run_by_pk``, but None when another process holds the run (no pass ran)."""
    locked = statements_of(session).try_lock_run(session, run_pk)
    if locked is None:
        return None
    run, version_hash, is_paused = locked
    if version_hash is None or not _may_pass(run.state, version_hash, is_paused):
        return []
    return schedule_run(session, run, dag_version(session, run.dag_id, version_hash))


def _may_pass(run_state: str, dag_version: str | None, is_paused: bool | None) -> bool:
    """Whether a pass may schedule a run: not finished, its DAG still parsed and not paused."""
    unfinished = run_state in (DagRunState.QUEUED, DagRunState.RUNNING)
    return unfinished and dag_version is not None and not is_paused


#: The last version read of each DAG in this process.
_DAGS: dict[str, CachedDag] = {}


def dag_version(session: Session, dag_id: str, version_hash: str) -> CachedDag:
    """The DAG at ``version_hash``, read once per version in a process.

    A pass reads only the hash with the run it locks: a 200-task DAG's structure costs a
    supervisor's downstream pass more to fetch and decode than the rest of its reads.
    """
    cached = cached_dag(dag_id, version_hash)
    if cached is not None:
        return cached
    row = session.execute(
        select(DagModel.fileloc, DagModel.structure, DagModel.version_hash).where(
            DagModel.dag_id == dag_id
        )
    ).one()
    structure = parse_structure(row.structure, row.version_hash)
    _DAGS[dag_id] = CachedDag(dag_id, row.fileloc, row.version_hash, structure)
    return _DAGS[dag_id]


def cached_dag(dag_id: str, version_hash: str) -> CachedDag | None:
    """The DAG at ``version_hash`` if this process has read it already (``dag_version``)."""
    cached = _DAGS.get(dag_id)
    return cached if cached is not None and cached.version_hash == version_hash else None


def pass_after_end(session: Session, run_pk: int, successor: str | None = None) -> list[Enqueue]:
    """A supervisor's pass over its run once its try's end is written (``state.engine.end``).

    It waits for the run's lock, not skips it: a scheduler holding the run may have read it
    before that end committed, and the downstream task would then wait a whole loop.
    ``successor``: the ended task's one successor, decided first from its own rows and its
    upstreams' (``_decide_successor``); anything else is the full pass of ``schedule_run``.
    """
    locked = statements_of(session).lock_run(session, run_pk)
    if locked is None or not _may_pass(locked.state, locked.dag_version, locked.is_paused):
        return []
    dag = dag_version(session, locked.dag_id, locked.dag_version)
    if successor is not None and successor in dag.structure.tasks:
        decided = _decide_successor(session, locked, dag, successor)
        if decided is not None:
            return decided
    # The full pass works on the run as a mapped object; its row is locked already.
    run = session.get_one(DagRun, run_pk, populate_existing=True)
    return schedule_run(session, run, dag, defer=True)


class RunHead(Protocol):
    """What a supervisor's pass reads of a run first (a row of its dialect's ``lock_run``)."""

    dag_id: str
    run_id: str
    state: str
    version_hash: str


_SUCCESSOR_ROWS = select(_TI.c.id, _TI.c.task_id, _TI.c.state).where(
    _TI.c.dag_id == bindparam("dag_id"),
    _TI.c.run_id == bindparam("run_id"),
    or_(_TI.c.task_id.in_(bindparam("task_ids", expanding=True)), _TI.c.state == TI.SCHEDULED),
)


def _decide_successor(
    session: Session, run: RunHead, dag: CachedDag, successor: str
) -> list[Enqueue] | None:
    """Decide ``successor`` alone, from its rows and its upstreams'; None when the full pass
    must (the run changed version or is not running, tries wait for slots, a cascade)."""
    if run.state != DagRunState.RUNNING or run.version_hash != dag.version_hash:
        return None
    if dag.structure.capped:
        return None  # what each try takes is counted by the pass
    spec = dag.structure.tasks[successor]
    task_ids = [*spec.upstream, successor]
    params = {"dag_id": run.dag_id, "run_id": run.run_id, "task_ids": task_ids}
    rows = [TIRow(r.id, r.task_id, TI(r.state)) for r in session.execute(_SUCCESSOR_ROWS, params)]
    if any(row.state == TI.SCHEDULED for row in rows):
        return None  # tries waiting for slots: the full pass queues them in order
    decisions = evaluate(dag.structure, rows, only=[successor])
    if decisions.upstream_failed or decisions.skip:
        return None  # a cascade, and perhaps the run's end
    if not decisions.schedule:
        return []  # it waits for another upstream
    if _outranked(session, run, spec):
        return None  # another run's try waits for the slot with a higher weight
    transition_tis(session, decisions.schedule, [TI.NONE], TI.SCHEDULED)
    return [Enqueue.of(ti) for ti in _queue(session, decisions.schedule, utcnow())]


_OUTRANKED = select(
    outranked(bindparam("pool"), bindparam("weight"), bindparam("dag_id"), bindparam("run_id"))
)


def _outranked(session: Session, run: RunHead, spec: TaskSpec) -> bool:
    params = {"pool": spec.pool, "weight": spec.priority_weight}
    return bool(session.scalar(_OUTRANKED, {**params, "dag_id": run.dag_id, "run_id": run.run_id}))


def queue_task_alone(session: Session, run: DagRun, task_id: str) -> Enqueue:
    """Start ``run`` with only ``task_id`` left in it, its first try queued; that try.

    ``tradewind tasks test`` runs one task whatever its upstream tasks did: the run's other task
    instances are marked ``removed``, so no scheduler ever runs them.
    """
    mark_run_started(session, run)
    rows = session.execute(
        select(TaskInstance.id, TaskInstance.task_id).where(
            TaskInstance.dag_id == run.dag_id, TaskInstance.run_id == run.run_id
        )
    ).all()
    others = [row.id for row in rows if row.task_id != task_id]
    transition_tis(session, others, [TI.NONE], TI.REMOVED)
    [target] = [row.id for row in rows if row.task_id == task_id]
    transition_tis(session, [target], [TI.NONE], TI.SCHEDULED)
    [queued] = _queue(session, [target], utcnow())
    return Enqueue.of(queued)
