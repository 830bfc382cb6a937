"""An ended try's slot handed to the task instance that takes it.

Which task instance takes the slot is planned from the DAG's structure (``state.engine.end_plan``);
this module names it as a ``SlotTaker`` value: the successor by name, still ``none``
(``lone_successor``), or the run's first try waiting in ``scheduled`` for a slot of the pool
(``first_waiting``). ``end_and_take`` records the end and queues the taker, in the SQL of the
store's dialect (``state.core.dialects``: one statement on PostgreSQL, so the hop between two tasks
of a chain pays one round trip instead of five; a short transaction on SQLite). Both queue
nothing unless the run is running at the version the plan was made from, and its DAG is at
that version and not paused. The rule and why it keeps every limit:
docs/decisions/one-end-path.md.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Row
from sqlalchemy.orm import Session

from state.core import (
    Fence,
    FirstInPool,
    NextByName,
    SlotTaker,
    TaskInstanceState,
    queued_values,
    statements_of,
)

__all__ = ["SlotTaker", "end_and_take", "first_waiting", "lone_successor", "queued_values"]


def lone_successor(dag_id: str, run_id: str, task_id: str) -> SlotTaker:
    """The one successor, by name, still ``none``; unless tries of its run wait for slots
    (the full pass queues those first)."""
    return NextByName(dag_id, run_id, task_id)


def first_waiting(
    dag_id: str, run_id: str, pool: str, among: Sequence[str] | None = None
) -> SlotTaker:
    """The run's first try waiting in ``scheduled`` for a slot of ``pool``; with ``among``, the
    first of a try of one of those tasks."""
    return FirstInPool(dag_id, run_id, pool, None if among is None else tuple(among))


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
    row as queued, if it was. Nothing is queued unless the run may hand the slot over and the
    taker still waits as chosen: then the end stands alone and the caller decides what follows.
    """
    statements = statements_of(session)
    return statements.end_and_take(session, fence, end, run_pk, taker, version_hash, now)
