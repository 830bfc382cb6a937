"""The SQL both dialects build their hot statements from, and the statements they write alike.

Built once, at import: building a statement costs a try more than running it. Parameter names
differ from column names: an UPDATE would take those as values to SET.

- ``RUN_COLUMNS`` / ``CLAIM_TI_COLUMNS``: what a claim reads of the run, the DAG and the task
  instance; ``JOIN_RUN`` joins them;
- ``SUCCESSOR_BY_NAME``, ``first_waiting(...)``: the SELECTs that choose a slot's taker;
- ``MAY_HAND_OVER``: whether an end may hand its slot over (the run and DAG at the plan's
  version, running, not paused);
- ``ENQUEUED``: what publishing a queued try's message needs of its row;
- ``RUN_HEAD`` / ``RUN_WITH_DAG``: a run read for a pass (each dialect adds its lock);
- ``SqlStatements``: ``beat`` and ``queue``, the same SQL on both.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Sequence
from types import SimpleNamespace
from typing import Any

from sqlalchemy import (
    BindParameter,
    Row,
    Select,
    bindparam,
    exists,
    func,
    literal_column,
    null,
    select,
)
from sqlalchemy.orm import Session

from state.core import (
    ACTIVE,
    DAG_TABLE,
    INCREMENT,
    POOL_TABLE,
    RUN_TABLE,
    TI_TABLE,
    Chosen,
    DagModel,
    DagRun,
    DagRunState,
    Fence,
    TaskInstanceState,
    as_utc,
    assert_fence,
    has_room,
    outranked,
    transition_tis_returning,
)
from state.core.dialects.base import FirstInPool, SlotTaker

TI = TaskInstanceState
_TI, _RUN, _DAG, _POOL = TI_TABLE, RUN_TABLE, DAG_TABLE, POOL_TABLE


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

JOIN_RUN = (
    _RUN.c.dag_id == _TI.c.dag_id,
    _RUN.c.run_id == _TI.c.run_id,
    _DAG.c.dag_id == _TI.c.dag_id,
)
# What a claim reads of the run and of the DAG: no part of the DAG's structure, whose JSON
# (hundreds of KiB for a large DAG) PostgreSQL would read whole to take one task's slice of it,
# ~2 ms of the server's CPU per claim of a 2,000-task DAG. The task's spec and the DAG's params
# come from the structure the worker parsed once for that version (``dag_version``).
RUN_COLUMNS = (
    _RUN.c.id.label("run_pk"),
    _RUN.c.version_hash.label("run_version"),
    _RUN.c.conf,
    _RUN.c.run_type,
    _RUN.c.logical_date,
    _RUN.c.data_interval_start,
    _RUN.c.data_interval_end,
    _RUN.c.partition_key,
    _RUN.c.partition_date,
    _DAG.c.fileloc,
    _DAG.c.version_hash.label("dag_version"),
)
# What a claim reads of its task instance.
CLAIM_TI_COLUMNS = tuple(
    _TI.c[name]
    for name in (
        "id", "dag_id", "run_id", "task_id", "map_index", "max_tries", "generation", "deliveries",
        "try_number", "next_method", "next_kwargs", "queued_at",
    )
)  # fmt: skip
_DATES = ("logical_date", "data_interval_start", "data_interval_end", "partition_date")


def in_utc(row: Any) -> SimpleNamespace:
    """The run's columns of a row as the driver returned it, its datetimes made UTC (as
    ``state.core.models.UTCDateTime`` makes them when it reads a column)."""
    run = SimpleNamespace(**row._asdict())
    for name in _DATES:
        setattr(run, name, as_utc(getattr(run, name)))
    return run


_CHOSEN, _WAITING = _TI.alias("chosen"), _TI.alias("waiting")
SUCCESSOR_BY_NAME = select(_CHOSEN.c.id).where(
    _CHOSEN.c.dag_id == bindparam("of_dag"),
    _CHOSEN.c.run_id == bindparam("of_run"),
    _CHOSEN.c.task_id == bindparam("successor"),
    ~exists().where(
        _WAITING.c.dag_id == bindparam("of_dag"),
        _WAITING.c.run_id == bindparam("of_run"),
        _WAITING.c.state == TI.SCHEDULED,
    ),
    # A try of another run waiting in its pool with a higher weight goes first (the pass).
    ~outranked(_CHOSEN.c.pool, _CHOSEN.c.priority_weight, bindparam("of_dag"), bindparam("of_run")),
)

_FIRST, _COUNTED = _TI.alias("first"), _TI.alias("counted")
_OF_DAG: BindParameter[str] = bindparam("of_dag")
_OF_RUN: BindParameter[str] = bindparam("of_run")


# The run's first try waiting for a slot of this pool, by weight then id (the order the full
# pass queues in; found through the partial index ``ix_task_instance_waiting``), unless the pool
# holds more than its slots now allow (lowered since): then the slot is given back, and the pool
# shrinks as tries end; or unless another run's try waits there with a higher weight: the slot is
# given back then too, for the scheduler's pass. Slots are counted as tries take them
# (``pool_slots``); the ended try and its taker take one each (the end of a DAG whose tasks take
# more hands nothing over: ``end_plan``). Counted in the same snapshot as the end, the ended try
# still counts as active, as its taker will. The DAG's ``max_active_tasks`` needs no count: a DAG
# whose limit changed is at another version, and the end hands nothing over then.
# A scalar subquery: PostgreSQL evaluates it once. As the ``IN (…)`` list of the UPDATE it could
# be run again for each row scanned, and ``FOR UPDATE`` skips a row this same statement moved, so
# the next waiting try would be chosen (and queued) as well.
def first_waiting(*conditions: Any) -> Select[Any]:
    """The SELECT of the run's first try waiting for a slot (``conditions`` narrow it)."""
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
                select(func.coalesce(func.sum(_COUNTED.c.pool_slots), 0))
                .where(
                    _COUNTED.c.state.in_(sorted(ACTIVE)), _COUNTED.c.pool == bindparam("of_pool")
                )
                .scalar_subquery(),
                select(_POOL.c.slots).where(_POOL.c.name == bindparam("of_pool")).scalar_subquery(),
                ending=1,
            ),
            ~outranked(
                bindparam("of_pool"),
                _FIRST.c.priority_weight,
                bindparam("of_dag"),
                bindparam("of_run"),
            ),
        )
        .order_by(_FIRST.c.priority_weight.desc(), _FIRST.c.id)
        .limit(1)
        .with_for_update(skip_locked=True)
        .scalar_subquery()
    )
    return select(first_id)


FIRST_WAITING = first_waiting()
#: The waiting try of ``first_waiting``, for the condition each dialect adds with ``among``.
WAITING_TRY = _FIRST

# What lets an end hand its slot over: the run is running at the version the plan was made
# from, and its DAG is at that version and not paused (a DAG whose limits changed is at another
# version: nothing is handed over then, and the pass counts again).
MAY_HAND_OVER = (
    select(_RUN.c.id)
    .join(_DAG, _DAG.c.dag_id == _RUN.c.dag_id)
    .where(
        _RUN.c.id == bindparam("run_pk"),
        _RUN.c.state == DagRunState.RUNNING,
        _RUN.c.version_hash == bindparam("version"),
        _DAG.c.version_hash == bindparam("version"),
        _DAG.c.is_paused.is_(False),
    )
)

# What publishing the successor's message needs of its row (``Enqueue``).
ENQUEUED = (
    _TI.c.id,
    _TI.c.try_number,
    _TI.c.dag_id,
    _TI.c.run_id,
    _TI.c.task_id,
    _TI.c.map_index,
    _TI.c.queue,
)

# The run's head with its DAG's: a Core row (loading the mapped run costs a supervisor ~1 ms).
RUN_HEAD = (
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
)
# The run as a mapped object, with what says whether its DAG's structure changed.
RUN_WITH_DAG = (
    select(DagRun, DagModel.version_hash, DagModel.is_paused)
    .outerjoin(DagModel, DagModel.dag_id == DagRun.dag_id)
    .where(DagRun.id == bindparam("run_pk"))
)


class SqlStatements:
    """What both dialects write alike, and the choice of a taker's SELECT they share."""

    #: The taker among named tasks (``FirstInPool.among``): each dialect binds the list its way.
    first_waiting_among: Select[Any]

    def beat(self, session: Session, fence: Fence) -> None:
        assert_fence(session, fence)

    def queue(
        self, session: Session, ti_ids: Collection[int], now: dt.datetime
    ) -> Sequence[Row[Any]]:
        return transition_tis_returning(
            session, ti_ids, [TI.SCHEDULED], TI.QUEUED, queued_values(now)
        )

    def chosen(self, taker: SlotTaker) -> tuple[Chosen, TaskInstanceState, str]:
        """The SELECT naming ``taker``, its parameters, the state it waits in, and the name
        of its shape."""
        params: dict[str, Any] = {"of_dag": taker.dag_id, "of_run": taker.run_id}
        if not isinstance(taker, FirstInPool):
            params["successor"] = taker.task_id
            return Chosen(SUCCESSOR_BY_NAME, params), TI.NONE, "successor"
        params["of_pool"] = taker.pool
        if taker.among is None:
            return Chosen(FIRST_WAITING, params), TI.SCHEDULED, "first_waiting"
        params["of_tasks"] = list(taker.among)
        return Chosen(self.first_waiting_among, params), TI.SCHEDULED, "first_waiting_among"
