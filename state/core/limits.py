"""The one rule of every limit (pools, ``max_active_tasks``), on numbers and on SQL columns alike,
and the rule of weights across runs (``outranked``).

Its own module, beneath both users: a pass's count of room (``state.engine.pools``) and the
statement that hands an ended try's slot over (``state.core.dialects``), so the two can never
disagree.
"""

from __future__ import annotations

from typing import Any, overload

from sqlalchemy import ColumnElement, exists, func, literal_column, or_, select

from state.core.models import DAG_TABLE, POOL_TABLE, TI_TABLE


@overload
def has_room(active: int, limit: int, ending: int = 0) -> bool: ...


@overload
def has_room(
    active: ColumnElement[Any], limit: ColumnElement[Any], ending: int = 0
) -> ColumnElement[bool]: ...


def has_room(active: Any, limit: Any, ending: int = 0) -> Any:
    """One more may start while those active, less the ``ending`` ones whose slots are being
    handed over, are fewer than the limit.

    The same expression on numbers (a pass's ``Room``) and on SQL columns (the statement that
    hands an ended try's slot over), so the two can never disagree.
    """
    return active - ending < limit


#: A try waiting in another run, which ``outranked`` compares a candidate with.
HIGHER = TI_TABLE.alias("higher")
_POOL, _DAG = POOL_TABLE.alias("higher_pool"), DAG_TABLE.alias("higher_dag")


def waiting_elsewhere(pool: Any, dag_id: Any, run_id: Any) -> tuple[ColumnElement[bool], ...]:
    """``HIGHER`` waits for a slot of ``pool`` in another run than ``dag_id``/``run_id`` and could
    take one: its DAG is not paused, and it takes no more slots than the pool has. A try that
    could never run (its DAG paused, its pool too small) must not hold a slot back for ever.
    """
    # Its own pool's size (the same pool): correlated to the row at hand, not two levels out.
    size = select(_POOL.c.slots).where(_POOL.c.name == HIGHER.c.pool).scalar_subquery()
    return (
        # Written out, not bound: the planner then knows it may use the partial index.
        HIGHER.c.state == literal_column("'scheduled'"),
        HIGHER.c.pool == pool,
        or_(HIGHER.c.dag_id != dag_id, HIGHER.c.run_id != run_id),
        HIGHER.c.pool_slots <= size,
        exists().where(_DAG.c.dag_id == HIGHER.c.dag_id, _DAG.c.is_paused.is_(False)),
    )


def outranked(pool: Any, weight: Any, dag_id: Any, run_id: Any) -> ColumnElement[bool]:
    """Whether a try of another run waits for a slot of ``pool`` with a higher weight than
    ``weight``: an ended try's slot is then not handed to a try of its own run.

    The highest such weight is one uncorrelated subquery, read once (an ``EXISTS`` per candidate
    made PostgreSQL join every waiting try with every other: seconds for 2,000 of each).
    """
    # The first row down the index on (pool, weight), not a max() the planner may not see as one.
    highest = (
        select(HIGHER.c.priority_weight)
        .where(*waiting_elsewhere(pool, dag_id, run_id))
        .order_by(HIGHER.c.priority_weight.desc())
        .limit(1)
    )
    below: ColumnElement[bool] = weight < func.coalesce(highest.scalar_subquery(), weight)
    return below
