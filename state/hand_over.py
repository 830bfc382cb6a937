"""An ended try's slot handed to the task instance that takes it: the SQL of the hand-overs.

Which task instance takes the slot is planned from the DAG's structure (``state.end_plan``);
this module names it as a SELECT (a ``SlotTaker``): the successor by name, still ``none``
(``lone_successor``), or the run's first try waiting in ``scheduled`` for a slot of the pool
(``first_waiting``). ``end_and_take`` records the end and queues the taker: on PostgreSQL one
statement (the hop between two tasks of a chain pays one round trip instead of five), on SQLite
a short transaction, side by side below. Both queue nothing unless ``may_hand_over`` holds: the
run is running at the version the plan was made from, its DAG is at that version and not paused.
The rule and why it keeps every limit: docs/decisions/one-end-path.md.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Integer,
    Row,
    Select,
    String,
    any_,
    bindparam,
    exists,
    func,
    literal,
    literal_column,
    null,
    select,
    true,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session

from state.enums import ACTIVE, DagRunState, TaskInstanceState
from state.models import DAG_TABLE, POOL_TABLE, RUN_TABLE, TI_TABLE
from state.pools import has_room
from state.transitions import (
    INCREMENT,
    Chosen,
    Fence,
    execute_compiled_once,
    ti_move,
    transition_tis,
    transition_tis_returning,
)

TI = TaskInstanceState
_TI, _RUN, _DAG, _POOL = TI_TABLE, RUN_TABLE, DAG_TABLE, POOL_TABLE


@dataclass(frozen=True)
class SlotTaker:
    """The task instance that takes an ended try's slot: chosen by a SELECT, moved from the
    state it waits in (``none`` or ``scheduled``) to ``queued``."""

    chosen: Chosen
    waiting: TaskInstanceState


def queued_values(now: dt.datetime) -> dict[str, Any]:
    """What queuing writes besides the state: a new try, not yet claimed by anyone.

    The NULLs are written into the statement, not bound: composed with the move that ends a try
    (``end_and_take``), a bound ``next_retry_at`` would share its parameter with that end's.
    """
    return {
        "try_number": INCREMENT,
        "queued_at": now,
        "fence_token": _NULL,
        # Not ``deliveries``: it counts across tries until a supervisor records an end.
        "queued_resends": 0,
        "hostname": _NULL,
        "pid": _NULL,
        "next_retry_at": _NULL,
    }


# One object: moves are cached by the identity of the expressions they write.
_NULL = null()


_CHOSEN, _WAITING = _TI.alias("chosen"), _TI.alias("waiting")
# The successor by name, unless tries of its run wait for slots (the full pass queues those
# first). Parameter names differ from column names: an UPDATE would take those as SET values.
_SUCCESSOR_BY_NAME = select(_CHOSEN.c.id).where(
    _CHOSEN.c.dag_id == bindparam("of_dag"),
    _CHOSEN.c.run_id == bindparam("of_run"),
    _CHOSEN.c.task_id == bindparam("successor"),
    ~exists().where(
        _WAITING.c.dag_id == bindparam("of_dag"),
        _WAITING.c.run_id == bindparam("of_run"),
        _WAITING.c.state == TI.SCHEDULED,
    ),
)


def chosen_successor(dag_id: str, run_id: str, task_id: str) -> Chosen:
    return Chosen(_SUCCESSOR_BY_NAME, {"of_dag": dag_id, "of_run": run_id, "successor": task_id})


def lone_successor(dag_id: str, run_id: str, task_id: str) -> SlotTaker:
    """The one successor, by name, still ``none`` (see ``chosen_successor``)."""
    return SlotTaker(chosen_successor(dag_id, run_id, task_id), TI.NONE)


_FIRST, _COUNTED = _TI.alias("first"), _TI.alias("counted")


# The run's first try waiting for a slot of this pool (the order the full pass queues in; found
# through the partial index ``ix_task_instance_waiting``), unless the pool holds more than its
# slots now allow (lowered since): then the slot is given back, and the pool shrinks as tries
# end. Counted in the same snapshot as the end, the ended try still counts as active, as its
# taker will. The DAG's ``max_active_tasks`` needs no count: a DAG whose limit changed is at
# another version, and the end hands nothing over then (``end_and_take``).
# A scalar subquery: PostgreSQL evaluates it once. As the ``IN (…)`` list of the UPDATE it could
# be run again for each row scanned, and ``FOR UPDATE`` skips a row this same statement moved, so
# the next waiting try would be chosen (and queued) as well.
def _first_waiting(*conditions: Any) -> Select[Any]:
    first_id = (
        select(_FIRST.c.id)
        .where(
            _FIRST.c.dag_id == bindparam("of_dag"),
            _FIRST.c.run_id == bindparam("of_run"),
            # Written out, not bound: the planner then knows it may use the partial index.
            _FIRST.c.state == literal_column(f"'{TI.SCHEDULED.value}'"),
            _FIRST.c.pool == bindparam("of_pool"),
            *conditions,
            has_room(
                select(func.count())
                .where(
                    _COUNTED.c.state.in_(sorted(ACTIVE)), _COUNTED.c.pool == bindparam("of_pool")
                )
                .scalar_subquery(),
                select(_POOL.c.slots).where(_POOL.c.name == bindparam("of_pool")).scalar_subquery(),
                ending=1,
            ),
        )
        .order_by(_FIRST.c.id)
        .limit(1)
        .with_for_update(skip_locked=True)
        .scalar_subquery()
    )
    return select(first_id)


_FIRST_WAITING = _first_waiting()
# Among named tasks: a list on SQLite; one array on PostgreSQL, whose statement is compiled once
# (``end_and_take``) and so cannot expand a list.
_FIRST_WAITING_AMONG = _first_waiting(_FIRST.c.task_id.in_(bindparam("of_tasks", expanding=True)))
_FIRST_WAITING_AMONG_ARRAY = _first_waiting(
    _FIRST.c.task_id == any_(bindparam("of_tasks", type_=ARRAY(String)))
)


def first_waiting(
    dag_id: str,
    run_id: str,
    pool: str,
    among: Sequence[str] | None = None,
    postgresql: bool = False,
) -> SlotTaker:
    """The run's first try waiting in ``scheduled`` for a slot of ``pool``; with ``among``, the
    first of a try of one of those tasks (``postgresql``: the form ``end_and_take`` takes)."""
    params: dict[str, Any] = {"of_dag": dag_id, "of_run": run_id, "of_pool": pool}
    if among is None:
        return SlotTaker(Chosen(_FIRST_WAITING, params), TI.SCHEDULED)
    chosen = _FIRST_WAITING_AMONG_ARRAY if postgresql else _FIRST_WAITING_AMONG
    return SlotTaker(Chosen(chosen, {**params, "of_tasks": list(among)}), TI.SCHEDULED)


def end_and_take(
    session: Session,
    fence: Fence,
    end: tuple[TaskInstanceState, Mapping[str, Any]],
    run_pk: int,
    taker: SlotTaker,
    version_hash: str,
    now: dt.datetime,
) -> tuple[bool, Sequence[Row[Any]]]:
    """Record a try's end (its state and values) and queue ``taker`` in its slot.

    Returns whether the end was recorded (False: the fence no longer holds), and the taker's
    row as queued, if it was. Nothing is queued unless ``may_hand_over`` holds and the taker
    still waits as chosen: then the end stands alone and the caller decides what follows.
    """
    if session.get_bind().dialect.name == "postgresql":
        return _end_and_queue(session, fence, end, run_pk, taker, version_hash, now)
    # SQLite: one short transaction. The taker first: the ended try still counts as active
    # there, as in PostgreSQL's one statement, whose snapshot predates the end.
    head = session.execute(_MAY_HAND_OVER, {"run_pk": run_pk, "version": version_hash}).first()
    queued: Sequence[Row[Any]] = []
    if head is not None:
        queued = transition_tis_returning(
            session, taker.chosen, [taker.waiting], TI.QUEUED, queued_values(now)
        )
    end_state, end_values = end
    if transition_tis(session, [fence.ti_id], [TI.RUNNING], end_state, end_values, fence) != 1:
        session.rollback()
        return False, []
    return True, queued


# What lets an end hand its slot over: the run is running at the version the plan was made
# from, and its DAG is at that version and not paused (a DAG whose limits changed is at another
# version: nothing is handed over then, and the pass counts again). The run's row is locked:
# a scheduler's pass holding it runs first.
_MAY_HAND_OVER_WHERE = (
    _RUN.c.id == bindparam("run_pk"),
    _RUN.c.state == DagRunState.RUNNING,
    _RUN.c.version_hash == bindparam("version"),
    _DAG.c.version_hash == bindparam("version"),
    _DAG.c.is_paused.is_(False),
)
_MAY_HAND_OVER = (
    select(_RUN.c.id)
    .join(_DAG, _DAG.c.dag_id == _RUN.c.dag_id)
    .where(*_MAY_HAND_OVER_WHERE)
    .with_for_update(of=_RUN)
)


def _end_and_queue(
    session: Session,
    fence: Fence,
    end: tuple[TaskInstanceState, Mapping[str, Any]],
    run_pk: int,
    taker: SlotTaker,
    version_hash: str,
    now: dt.datetime,
) -> tuple[bool, Sequence[Row[Any]]]:
    """``end_and_take`` as one statement (PostgreSQL). Locks in the usual order: the ended task
    instance, the run (a scheduler holding it goes first), the taker."""
    ended = Chosen(_ENDED, {"ended_id": fence.ti_id})
    end_state, end_values = end
    move, params = ti_move(ended, [TI.RUNNING], end_state, end_values, fence)
    queue, queue_params = ti_move(taker.chosen, [taker.waiting], TI.QUEUED, queued_values(now))
    shared = params.keys() & queue_params.keys()
    if shared:  # one would silently take the other's value
        raise ValueError(f"the two moves share parameters: {sorted(shared)}")
    params.update(queue_params, run_pk=run_pk, version=version_hash)
    rows = execute_compiled_once(session, _one_statement(move, queue), params)
    recorded = bool(rows and rows[0].recorded)
    return recorded, [row for row in rows if row.id is not None]


# The ended try's task instance as a one-id SELECT: the statement then has no list parameter
# to expand, so it compiles to one SQL text.
_ENDED = select(bindparam("ended_id", type_=Integer))


@functools.cache
def _one_statement(move: Any, queue: Any) -> Select[Any]:
    """The end, the run's lock and the queuing as CTEs of one SELECT, built once per shape.

    The SELECT returns a row even when nothing was queued, saying whether the end was recorded.
    """
    ended = move.returning(_TI.c.id).cte("ended")
    head = _MAY_HAND_OVER.where(exists(select(ended.c.id))).cte("head")
    queued = queue.where(exists(select(head.c.id))).returning(*_ENQUEUED).cte("queued")
    recorded = select(func.count()).select_from(ended).scalar_subquery().label("recorded")
    one_row = select(literal(1).label("one")).subquery("one_row")
    return select(recorded, *queued.c).select_from(one_row.outerjoin(queued, true()))


# What publishing the successor's message needs of its row (``Enqueue``).
_ENQUEUED = (
    _TI.c.id,
    _TI.c.try_number,
    _TI.c.dag_id,
    _TI.c.run_id,
    _TI.c.task_id,
    _TI.c.map_index,
    _TI.c.queue,
)
