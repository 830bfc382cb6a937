"""Scheduling one DAG run: decide, queue and settle it, in a constant number of statements.

Used by the scheduler loop and by a supervisor whose try just ended (so a chain does not wait
for the next loop). The run row is locked ``FOR UPDATE SKIP LOCKED`` first: whoever holds it
schedules the run, anyone else moves on, and no try is ever queued twice.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import Row, bindparam, or_, select
from sqlalchemy.orm import Session

from state.enums import FINISHED, DagRunState, TaskInstanceState
from state.hand_over import (
    SlotTaker,
    chosen_successor,
    follows_only,
    holding_back,
    queued_values,
    single_successor,
)
from state.mapping import expand_mapped
from state.models import DAG_TABLE, RUN_TABLE, TI_TABLE, DagModel, DagRun, TaskInstance, utcnow
from state.pools import may_start_run, room_to_queue
from state.readiness import TIRow, evaluate, run_outcome
from state.runs import mark_run_started, verify_integrity
from state.transitions import transition_run, transition_tis, transition_tis_returning

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


# Built once (a pass runs them for every run, and building costs more than a cached execute).
_LOCK_RUN = select(DagRun).where(DagRun.id == bindparam("run_pk")).with_for_update(skip_locked=True)
_WAIT_FOR_RUN = select(DagRun).where(DagRun.id == bindparam("run_pk")).with_for_update()
_TI = TI_TABLE
_RUN_ROWS = select(_TI.c.id, _TI.c.task_id, _TI.c.state, _TI.c.next_retry_at, _TI.c.pool).where(
    _TI.c.dag_id == bindparam("dag_id"), _TI.c.run_id == bindparam("run_id")
)


def lock_run(session: Session, run_pk: int, wait: bool = False) -> DagRun | None:
    """The run, row-locked for this transaction; None if another process holds it.

    ``wait=True`` waits for the holder instead, as a supervisor's pass after a try's end does
    (``schedule_after_end``): a scheduler holding the run may have read it before that end
    committed, and skipping would leave the downstream task waiting a whole scheduler loop.
    """
    options = {"populate_existing": True}
    statement = _WAIT_FOR_RUN if wait else _LOCK_RUN
    return session.scalars(statement, {"run_pk": run_pk}, execution_options=options).first()


def schedule_run(
    session: Session, run: DagRun, dag_model: DagModel, now: dt.datetime | None = None
) -> list[Enqueue]:
    """One pass over one locked run; returns the tries to publish after commit."""
    now = now or utcnow()
    if run.version_hash != dag_model.version_hash:
        verify_integrity(session, run, dag_model)
    # A queued run may start only under max_active_runs; it then holds the DAG's lock.
    max_runs = int(dag_model.structure.get("max_active_runs", 16))
    if run.state == DagRunState.QUEUED and not may_start_run(session, run.dag_id, max_runs):
        return []
    rows = session.execute(_RUN_ROWS, {"dag_id": run.dag_id, "run_id": run.run_id}).all()
    states = {row.id: TI(row.state) for row in rows}
    _remove_gone(session, dag_model.structure, rows, states)
    _apply_decisions(session, dag_model.structure, rows, states, now)
    due = [
        r.id
        for r in rows
        if r.state == TI.UP_FOR_RETRY and r.next_retry_at and r.next_retry_at <= now
    ]
    if transition_tis(session, due, [TI.UP_FOR_RETRY], TI.SCHEDULED):
        states.update(dict.fromkeys(due, TI.SCHEDULED))
    pools = {row.id: row.pool for row in rows}
    enqueued = _queue_scheduled(session, run.dag_id, dag_model.structure, pools, states, now)
    if enqueued:
        mark_run_started(session, run)
    settle_run(session, run, list(states.values()), now)
    return enqueued


def _apply_decisions(
    session: Session,
    structure: Mapping[str, Any],
    rows: Any,
    states: dict[int, TaskInstanceState],
    now: dt.datetime,
) -> None:
    decisions = evaluate(structure, [TIRow(r.id, r.task_id, r.state) for r in rows])
    expand_mapped(session, structure, rows, decisions)  # .expand / .batch: state/mapping.py
    for target in (TI.SCHEDULED, TI.UPSTREAM_FAILED, TI.SKIPPED):
        ids = decisions.target(target)
        values = {"end_date": now} if target in FINISHED else None
        transition_tis(session, ids, [TI.NONE], target, values)
        states.update(dict.fromkeys(ids, target))


def _remove_gone(
    session: Session, structure: Mapping[str, Any], rows: Any, states: dict[int, TaskInstanceState]
) -> None:
    """Tasks no longer in the DAG that have nothing left to do (or a retry to come) are removed.

    ``verify_integrity`` leaves a queued or running try alone; once it ends in ``up_for_retry``
    it must not be retried into a task the DAG no longer has.
    """
    tasks = structure["tasks"]
    waiting = (TI.NONE, TI.SCHEDULED, TI.UP_FOR_RETRY)
    gone = [r for r in rows if r.task_id not in tasks and r.state in waiting]
    from_states = {TI(r.state) for r in gone}
    ids = [r.id for r in gone]
    if transition_tis(session, ids, from_states, TI.REMOVED):
        states.update(dict.fromkeys(ids, TI.REMOVED))


def _queue_scheduled(
    session: Session,
    dag_id: str,
    structure: Mapping[str, Any],
    pools: Mapping[int, str],
    states: dict[int, TaskInstanceState],
    now: dt.datetime,
) -> list[Enqueue]:
    """``scheduled -> queued`` within max_active_tasks and pool slots; each queue starts a try."""
    scheduled = sorted(ti_id for ti_id, state in states.items() if state == TI.SCHEDULED)
    if not scheduled:
        return []
    # The cap is the DAG's over all of its runs (as in Airflow), and each pool's over all DAGs.
    max_tasks = int(structure.get("max_active_tasks", 16))
    room = room_to_queue(session, dag_id, max_tasks, {pools[ti_id] for ti_id in scheduled})
    ready = [ti_id for ti_id in scheduled if room.take(pools[ti_id])]
    queued = _queue(session, ready, now)
    states.update(dict.fromkeys((ti.id for ti in queued), TI.QUEUED))
    return [Enqueue.of(ti) for ti in queued]


def _queue(session: Session, ti_ids: list[int], now: dt.datetime) -> Sequence[Row[Any]]:
    """``scheduled -> queued``: each queue starts a try."""
    return transition_tis_returning(session, ti_ids, [TI.SCHEDULED], TI.QUEUED, queued_values(now))


def settle_run(
    session: Session, run: DagRun, states: list[TaskInstanceState], now: dt.datetime
) -> None:
    """Derive the run's state from its task instances: finished only when all of them are."""
    outcome = run_outcome(states)
    if outcome is None or run.state not in (DagRunState.QUEUED, DagRunState.RUNNING):
        return
    if outcome == DagRunState.SUCCESS:
        mark_run_started(session, run)  # a run succeeds from running only
    target = DagRunState(outcome)
    if transition_run(session, run.id, [DagRunState(run.state)], target, {"end_date": now}):
        run.state = target


def schedule_run_by_pk(session: Session, run_pk: int) -> list[Enqueue]:
    """Lock and schedule one run, if nobody else holds it."""
    return try_schedule_run(session, run_pk) or []


def try_schedule_run(session: Session, run_pk: int) -> list[Enqueue] | None:
    """As ``schedule_run_by_pk``, but None when another process holds the run (no pass ran)."""
    options = {"populate_existing": True}
    locked = session.execute(
        _LOCK_RUN_WITH_DAG, {"run_pk": run_pk}, execution_options=options
    ).first()
    if locked is None:
        return None
    run, version_hash, is_paused = locked
    if run.state not in (DagRunState.QUEUED, DagRunState.RUNNING):
        return []
    if version_hash is None or is_paused:
        return []
    return schedule_run(session, run, dag_structure(session, run.dag_id, version_hash))


# The run, locked unless another holds it, with what says whether its DAG's structure changed.
_LOCK_RUN_WITH_DAG = (
    select(DagRun, DagModel.version_hash, DagModel.is_paused)
    .outerjoin(DagModel, DagModel.dag_id == DagRun.dag_id)
    .where(DagRun.id == bindparam("run_pk"))
    .with_for_update(of=DagRun, skip_locked=True)
)

#: The last structure read of each DAG in this process, by its version hash.
_STRUCTURES: dict[str, DagModel] = {}


def dag_structure(session: Session, dag_id: str, version_hash: str) -> DagModel:
    """The DAG at ``version_hash``, read once per version in a process.

    A pass reads only the hash with the run it locks: a 200-task DAG's structure costs a
    supervisor's downstream pass more to fetch and decode than the rest of its reads. The copy
    kept is a transient row, never attached to a session, and is read, never changed.
    """
    cached = cached_structure(dag_id, version_hash)
    if cached is not None:
        return cached
    row = session.execute(
        select(DagModel.fileloc, DagModel.structure, DagModel.version_hash).where(
            DagModel.dag_id == dag_id
        )
    ).one()
    snapshot = DagModel(
        dag_id=dag_id, fileloc=row.fileloc, structure=row.structure, version_hash=row.version_hash
    )
    _STRUCTURES[dag_id] = snapshot
    return snapshot


def cached_structure(dag_id: str, version_hash: str) -> DagModel | None:
    """The DAG at ``version_hash`` if this process has read it already (``dag_structure``)."""
    cached = _STRUCTURES.get(dag_id)
    return cached if cached is not None and cached.version_hash == version_hash else None


def successor_to_hand_over(dag_id: str, version_hash: str, ended: str, pool: str) -> str | None:
    """The task whose readiness the success of ``ended`` alone decides, to be queued in its slot
    (``state.hand_over``); None when the pass must read the run, or the DAG is not read yet."""
    dag_model = cached_structure(dag_id, version_hash)
    if dag_model is None:
        return None
    tasks: Mapping[str, Any] = dag_model.structure["tasks"]
    single = single_successor(tasks, ended, pool)
    if single is None or not follows_only(tasks, single[1], ended):
        return None
    return single[0]


def holding_back_of(dag_id: str, version_hash: str, ended: str) -> list[str] | None:
    """``state.hand_over.holding_back`` for task ``ended`` of the DAG at ``version_hash``; None
    also when this process has not read that structure yet. Kept per set of downstream tasks:
    the 2,000 upstreams of a join share one answer."""
    dag_model = cached_structure(dag_id, version_hash)
    if dag_model is None:
        return None
    tasks: Mapping[str, Any] = dag_model.structure["tasks"]
    key = (dag_id, version_hash, tuple(tasks[ended].get("downstream", [])))
    if key not in _HOLDING_BACK:
        if len(_HOLDING_BACK) >= 256:
            _HOLDING_BACK.clear()
        _HOLDING_BACK[key] = holding_back(tasks, ended)
    return _HOLDING_BACK[key]


_HOLDING_BACK: dict[tuple[str, str, tuple[str, ...]], list[str] | None] = {}


def schedule_after_end(
    session: Session, run_pk: int, ended: str, pool: str, succeeded: bool
) -> list[Enqueue]:
    """A supervisor's pass over its run, in the transaction that recorded its try's end.

    The common case, a successful task with one plain successor in the same pool, is decided
    from the successor's and its upstreams' rows alone, and the successor takes the slot the
    ended try held (both in this transaction: the counts of the pool and of the DAG's active
    task instances are the same before and after it, so no limit can be passed that was not
    already).
    Anything else (a failure or a retry, a mapped successor, several successors, other tries
    waiting for slots in the run, a DAG that changed) is the full pass of ``schedule_run``.
    """
    locked = session.execute(_LOCK_RUN_HEAD, {"run_pk": run_pk}).first()
    if locked is None:
        return []
    if locked.state not in (DagRunState.QUEUED, DagRunState.RUNNING):
        return []
    if locked.dag_version is None or locked.is_paused:
        return []
    dag_model = dag_structure(session, locked.dag_id, locked.dag_version)
    handed_over = _hand_over_slot(session, locked, dag_model, ended, pool) if succeeded else None
    if handed_over is not None:
        return handed_over
    # The full pass works on the run as a mapped object; its row is locked already.
    run = session.get_one(DagRun, run_pk, populate_existing=True)
    return schedule_run(session, run, dag_model)


class RunHead(Protocol):
    """What the hand-over reads of a run (a row of ``_LOCK_RUN_HEAD``)."""

    dag_id: str
    run_id: str
    state: str
    version_hash: str


_RUN = RUN_TABLE
_DAG = DAG_TABLE
# The run's head, locked, with its DAG's: a Core row (loading the mapped run costs the hop ~1 ms).
_LOCK_RUN_HEAD = (
    select(
        _RUN.c.dag_id,
        _RUN.c.run_id,
        _RUN.c.state,
        _RUN.c.version_hash,
        _DAG.c.version_hash.label("dag_version"),
        _DAG.c.is_paused,
    )
    .select_from(_RUN.outerjoin(_DAG, _DAG.c.dag_id == _RUN.c.dag_id))
    .where(_RUN.c.id == bindparam("run_pk"))
    .with_for_update(of=_RUN)
)


_SUCCESSOR_ROWS = select(_TI.c.id, _TI.c.task_id, _TI.c.state).where(
    _TI.c.dag_id == bindparam("dag_id"),
    _TI.c.run_id == bindparam("run_id"),
    or_(_TI.c.task_id.in_(bindparam("task_ids", expanding=True)), _TI.c.state == TI.SCHEDULED),
)


def _hand_over_slot(
    session: Session, run: RunHead, dag_model: DagModel, ended: str, pool: str
) -> list[Enqueue] | None:
    """Queue the one successor of ``ended`` in its slot; None when the full pass must decide."""
    tasks: Mapping[str, Any] = dag_model.structure["tasks"]
    if run.state != DagRunState.RUNNING or run.version_hash != dag_model.version_hash:
        return None
    single = single_successor(tasks, ended, pool)
    if single is None:
        return None
    successor, spec = single
    if follows_only(tasks, spec, ended):
        chosen = chosen_successor(run.dag_id, run.run_id, successor)
        values = queued_values(utcnow())
        queued = transition_tis_returning(session, chosen, [TI.NONE], TI.QUEUED, values)
        if queued:
            return [Enqueue.of(row) for row in queued]
        # Not 'none' any more, or tries of the run wait for slots: read the rows and decide.
    task_ids = [*spec["upstream"], successor]
    params = {"dag_id": run.dag_id, "run_id": run.run_id, "task_ids": task_ids}
    rows = [TIRow(r.id, r.task_id, TI(r.state)) for r in session.execute(_SUCCESSOR_ROWS, params)]
    if any(row.state == TI.SCHEDULED for row in rows):
        return None  # tries waiting for slots: the full pass queues them in order
    decisions = evaluate(dag_model.structure, rows, only=[successor])
    if decisions.upstream_failed or decisions.skip:
        return None  # a cascade, and perhaps the run's end
    if not decisions.schedule:
        return []  # it waits for another upstream
    transition_tis(session, decisions.schedule, [TI.NONE], TI.SCHEDULED)
    return [Enqueue.of(ti) for ti in _queue(session, decisions.schedule, utcnow())]


def take_slot(
    session: Session, run_pk: int, taker: SlotTaker, version_hash: str, now: dt.datetime
) -> list[Enqueue]:
    """Queue ``taker`` in the slot of a try of run ``run_pk`` that is ending in this transaction;
    the move ``state.hand_over.end_and_queue`` makes in its one statement on PostgreSQL, with
    the same conditions: the run locked and running at ``version_hash``, its DAG at that version
    and not paused."""
    head = session.execute(_LOCK_RUN_HEAD, {"run_pk": run_pk}).first()
    if head is None or head.state != DagRunState.RUNNING or head.is_paused:
        return []
    if head.version_hash != version_hash or head.dag_version != version_hash:
        return []
    queued = transition_tis_returning(
        session, taker.chosen, [taker.waiting], TI.QUEUED, queued_values(now)
    )
    return [Enqueue.of(row) for row in queued]
