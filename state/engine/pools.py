"""Pools, ``max_active_tasks`` and ``max_active_runs``: how much more a scheduling pass may start.

Every limit is a count over rows that are the truth already (task instances ``queued`` or
``running``, runs ``running``), taken inside the pass's transaction after locking the row of the
thing counted against: the DAG's row for ``max_active_tasks`` and ``max_active_runs``, each
pool's row for its slots. Two schedulers queueing against the same DAG or pool therefore take
turns for the few milliseconds of a pass, and the second one counts what the first committed;
nothing has to be given back when a try ends, is reaped as a zombie or is cleared, because a
try that left ``queued``/``running`` is no longer counted. Why not counters:
docs/decisions/limits-are-counted-not-stored.md.

Locks are always taken in one order (run, then DAG, then pools by name), so passes never
deadlock one another; a pass that has nothing to queue takes none of them.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from state.core import (
    ACTIVE,
    DAG_TABLE,
    DEFAULT_POOL,
    HIGHER,
    POOL_TABLE,
    RUN_TABLE,
    TI_TABLE,
    DagRunState,
    Pool,
    TaskInstance,
    has_room,
    insert_for,
    insert_missing,
    waiting_elsewhere,
)


@dataclass
class Room:
    """What a pass may still queue: the DAG's active task instances against its limit, each
    pool's slots taken against its slots (``(taken, slots)`` by pool name), and, for a pass that
    defers to other runs, the highest weight waiting in each pool in another run."""

    active: int
    limit: int
    pools: dict[str, tuple[int, int]] = field(default_factory=dict)
    outranking: dict[str, int] = field(default_factory=dict)

    def take(self, pool: str, slots: int = 1, weight: int | None = None) -> bool:
        """Take a task instance of the DAG and ``slots`` of ``pool``; False (nothing taken) when
        either is full, or a try of another run waits in ``pool`` with more than ``weight``."""
        taken, size = self.pools.get(pool, (0, 0))
        # One more fits when those taken, less the slots beyond its first, are under the size.
        if not (has_room(self.active, self.limit) and has_room(taken, size, ending=1 - slots)):
            return False
        if weight is not None and weight < self.outranking.get(pool, weight):
            return False
        self.active += 1
        self.pools[pool] = (taken + slots, size)
        return True

    def any(self) -> bool:
        return has_room(self.active, self.limit) and any(
            has_room(taken, slots) for taken, slots in self.pools.values()
        )


# Built once: a pass runs these for every run it queues into, and building a statement costs
# several times what executing it against a warm cache does. On the tables (Core), not the
# mapped classes: the ORM's execute layer would double what a pass spends on each.
_TI = TI_TABLE
_POOL = POOL_TABLE
_DAG = DAG_TABLE
_RUN = RUN_TABLE
_ACTIVE = _TI.c.state.in_(list(ACTIVE))
_LOCK_DAG = select(_DAG.c.dag_id).where(_DAG.c.dag_id == bindparam("dag_id")).with_for_update()
_LOCK_POOLS = (
    select(_POOL.c.name)
    .where(_POOL.c.name.in_(bindparam("names", expanding=True)))
    .order_by(_POOL.c.name)
    .with_for_update()
)
_COUNT_ROOM = (
    select(
        _POOL.c.name,
        _POOL.c.slots,
        select(func.coalesce(func.sum(_TI.c.pool_slots), 0))
        .where(_ACTIVE, _TI.c.pool == _POOL.c.name)
        .scalar_subquery(),
        select(func.count()).where(_ACTIVE, _TI.c.dag_id == bindparam("dag_id")).scalar_subquery(),
    )
    .where(_POOL.c.name.in_(bindparam("names", expanding=True)))
    .order_by(_POOL.c.name)
)
# The highest weight waiting in each pool in another run (``waiting_elsewhere``): what a
# supervisor's pass defers to.
_OUTRANKING = (
    select(HIGHER.c.pool, func.max(HIGHER.c.priority_weight))
    .where(
        HIGHER.c.pool.in_(bindparam("names", expanding=True)),
        *waiting_elsewhere(HIGHER.c.pool, bindparam("dag_id"), bindparam("run_id")),
    )
    .group_by(HIGHER.c.pool)
)
_RUNNING_RUNS = (
    select(func.count())
    .select_from(_RUN)
    .where(_RUN.c.dag_id == bindparam("dag_id"), _RUN.c.state == DagRunState.RUNNING)
)


def lock_dag(session: Session, dag_id: str) -> None:
    """Hold the DAG's row until commit: its counts are ours to read and change meanwhile."""
    session.execute(_LOCK_DAG, {"dag_id": dag_id})


def room_to_queue(
    session: Session,
    run: tuple[str, str],
    max_active_tasks: int,
    pools: Collection[str],
    defer: bool = False,
) -> Room:
    """What may still be queued for the DAG of ``run`` (dag_id, run_id) and in ``pools``; locked
    if there is any. ``defer``: a try of another run waiting with a higher weight goes first.

    The first look takes no lock: while a large run waits for slots, its passes find no room
    and never queue behind the passes that do. Room seen there is counted again under the
    DAG's and the pools' locks, because another pass may be taking it at this moment.
    """
    dag_id, run_id = run
    names = sorted(set(pools))
    if not _count_room(session, dag_id, max_active_tasks, names).any():
        return Room(0, 0)
    lock_dag(session, dag_id)
    session.execute(_LOCK_POOLS, {"names": names})
    # Counted by a statement of its own, started after the locks were granted: on PostgreSQL
    # (READ COMMITTED) its snapshot then holds what the passes that had them committed.
    room = _count_room(session, dag_id, max_active_tasks, names)
    if defer:
        params = {"names": names, "dag_id": dag_id, "run_id": run_id}
        room.outranking = {pool: weight for pool, weight in session.execute(_OUTRANKING, params)}
    return room


def _count_room(session: Session, dag_id: str, max_active_tasks: int, names: list[str]) -> Room:
    """Slots free in each pool of ``names`` and task instances free for the DAG: one statement."""
    rows = session.execute(_COUNT_ROOM, {"dag_id": dag_id, "names": names}).all()
    if not rows:
        return Room(0, 0)  # none of the pools exists: nothing can be queued
    return Room(
        active=rows[0][3],
        limit=max_active_tasks,
        pools={name: (taken, slots) for name, slots, taken, _ in rows},
    )


def may_start_run(session: Session, dag_id: str, max_active_runs: int) -> bool:
    """Whether one more run of the DAG may start; if so the DAG stays locked until commit.

    As for tasks, a first unlocked count spares the lock to the queued runs that must wait.
    """
    if _running_runs(session, dag_id) >= max_active_runs:
        return False
    lock_dag(session, dag_id)
    return _running_runs(session, dag_id) < max_active_runs


def _running_runs(session: Session, dag_id: str) -> int:
    return session.scalar(_RUNNING_RUNS, {"dag_id": dag_id}) or 0


class PoolRefused(ValueError):
    """A pool change that cannot be made (negative slots, deleting the default pool)."""


def ensure_pool(session: Session, name: str, slots: int) -> None:
    """Create ``name`` with ``slots`` unless it exists (safe when two processes do it at once)."""
    insert_missing(session, Pool, [{"name": name, "slots": slots}], ["name"])


def set_pool(session: Session, name: str, slots: int, description: str | None = None) -> None:
    """Create ``name`` or change its slot count; lowering it never stops what already runs.

    Its description changes only when one is given."""
    if slots < 0:
        raise PoolRefused(f"a pool's slots must be >= 0, got {slots}")
    statement = insert_for(session)(Pool).values(name=name, slots=slots, description=description)
    update = {"slots": statement.excluded.slots}
    if description is not None:
        update["description"] = statement.excluded.description
    session.execute(statement.on_conflict_do_update(index_elements=["name"], set_=update))


def delete_pool(session: Session, name: str) -> bool:
    if name == DEFAULT_POOL:
        raise PoolRefused(f"{DEFAULT_POOL} cannot be deleted")
    pool = session.get(Pool, name)
    if pool is None:
        return False
    session.delete(pool)
    return True


def pool_names(session: Session) -> set[str]:
    return set(session.scalars(select(Pool.name)))


def pool_usage(session: Session) -> list[tuple[str, int, int]]:
    """Every pool as ``(name, slots, slots taken by tries queued or running now)``, by name."""
    active = dict(
        session.execute(
            select(TaskInstance.pool, func.sum(TaskInstance.pool_slots))
            .where(TaskInstance.state.in_(list(ACTIVE)))
            .group_by(TaskInstance.pool)
        ).all()
    )
    pools = session.execute(select(Pool.name, Pool.slots).order_by(Pool.name)).all()
    return [(name, slots, active.get(name, 0)) for name, slots in pools]
