"""A chain's next task takes the slot of the try it follows.

The rule and why it keeps every limit: docs/decisions/a-successor-takes-the-slot.md.

What can be decided from a DAG's structure alone: the one successor a task's success hands its
slot to (``single_successor``), and whether that success alone makes it ready
(``follows_only``). Such a successor is queued by name, ``none -> queued``, without reading the
run's rows first (``chosen_successor``). On PostgreSQL the try's end and that queuing are one
statement (``end_and_queue``): the hop between two tasks of a chain pays one round trip to the
database instead of five.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Dialect, Integer, Row, Select, bindparam, exists, func, literal, select, true
from sqlalchemy.orm import Session

from state.enums import DagRunState, TaskInstanceState
from state.models import DAG_TABLE, RUN_TABLE, TI_TABLE
from state.readiness import decide
from state.transitions import INCREMENT, Chosen, Fence, ti_move
from state.values import TIKey

TI = TaskInstanceState
_TI, _RUN, _DAG = TI_TABLE, RUN_TABLE, DAG_TABLE


def queued_values(now: dt.datetime) -> dict[str, Any]:
    """What queuing writes besides the state: a new try, not yet claimed by anyone."""
    return {
        "try_number": INCREMENT,
        "queued_at": now,
        "fence_token": None,
        # Not ``deliveries``: it counts across tries until a supervisor records an end.
        "queued_resends": 0,
        "hostname": None,
        "pid": None,
        "next_retry_at": None,
    }


def single_successor(
    tasks: Mapping[str, Any], ended: str, pool: str
) -> tuple[str, Mapping[str, Any]] | None:
    """The one downstream task of ``ended``, if it is unmapped and in the same pool."""
    successors = tasks.get(ended, {}).get("downstream", [])
    spec = tasks.get(successors[0]) if len(successors) == 1 else None
    if spec is None or spec.get("mapping") or spec.get("pool") != pool:
        return None
    return successors[0], spec


def follows_only(tasks: Mapping[str, Any], spec: Mapping[str, Any], ended: str) -> bool:
    """Whether the success of ``ended`` alone makes the task of ``spec`` ready: its one upstream,
    unmapped (one task instance), under a trigger rule that one success satisfies."""
    if spec["upstream"] != [ended] or tasks[ended].get("mapping"):
        return False
    return decide(spec["trigger_rule"], Counter({TI.SUCCESS: 1}), 1) == TI.SCHEDULED


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


def end_and_queue(
    session: Session,
    fence: Fence,
    end_values: Mapping[str, Any],
    run_pk: int,
    ti: TIKey,
    successor: str,
    version_hash: str,
    now: dt.datetime,
) -> tuple[bool, Sequence[Row[Any]]]:
    """Record a try's success and queue its lone successor, in one statement (PostgreSQL).

    Returns whether the end was recorded (False: the fence no longer holds), and the successor's
    row as queued, if it was. Locks in the usual order: the ended task instance, the run (whose
    pass this is: it waits for a scheduler holding it), the successor. Nothing is queued unless
    the run is running at ``version_hash``, its DAG is at that version and not paused, the
    successor is still ``none`` and no try of the run waits for a slot: then the end stands
    alone and the caller runs the ordinary pass.
    """
    ended = Chosen(_ENDED, {"ended_id": fence.ti_id})
    move, params = ti_move(ended, [TI.RUNNING], TI.SUCCESS, end_values, fence)
    queue, queue_params = ti_move(
        chosen_successor(ti.dag_id, ti.run_id, successor), [TI.NONE], TI.QUEUED, queued_values(now)
    )
    params.update(queue_params, run_pk=run_pk, version=version_hash)
    connection = session.connection()
    sql, constants = _driver_sql(move, queue, connection.dialect, tuple(sorted(params)))
    rows = connection.exec_driver_sql(sql, {**constants, **params}).all()
    recorded = bool(rows and rows[0].recorded)
    return recorded, [row for row in rows if row.id is not None]


# The ended try's task instance as a one-id SELECT: the statement then has no list parameter
# to expand, so it compiles to one SQL text.
_ENDED = select(bindparam("ended_id", type_=Integer))


@functools.lru_cache(maxsize=16)  # one entry per engine's dialect in practice
def _driver_sql(
    move: Any, queue: Any, dialect: Dialect, names: tuple[str, ...]
) -> tuple[str, dict[str, Any]]:
    """The statement's SQL text for ``dialect``, and the values it binds itself (constants).

    Compiled once: executed as a SQLAlchemy statement, each hop would build this statement's
    cache key anew, a walk over its whole tree that cost ~2 ms of CPU in a pool process (every
    page it touches after a fork is a copy-on-write fault), the most of any step of the hop.
    """
    compiled = _one_statement(move, queue).compile(dialect=dialect)
    # The state lists (``IN``) are expanded into the text here, once.
    expanded = compiled.construct_expanded_state(dict.fromkeys(names))
    constants = {k: v for k, v in expanded.parameters.items() if k not in names}
    return expanded.statement, constants


@functools.cache
def _one_statement(move: Any, queue: Any) -> Select[Any]:
    """The end, the run's lock and the queuing as CTEs of one SELECT, built once per shape.

    The SELECT returns a row even when nothing was queued, saying whether the end was recorded.
    """
    ended = move.returning(_TI.c.id).cte("ended")
    head = (
        select(_RUN.c.id)
        .join(_DAG, _DAG.c.dag_id == _RUN.c.dag_id)
        .where(
            _RUN.c.id == bindparam("run_pk"),
            exists(select(ended.c.id)),
            _RUN.c.state == DagRunState.RUNNING,
            _RUN.c.version_hash == bindparam("version"),
            _DAG.c.version_hash == bindparam("version"),
            _DAG.c.is_paused.is_(False),
        )
        .with_for_update(of=_RUN)
        .cte("head")
    )
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
