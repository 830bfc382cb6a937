"""The one writer of state columns: conditional UPDATEs checked against the transition table.

Every move of a task instance or DAG run goes through ``transition_tis`` / ``transition_run``:
the UPDATE names the states it expects to leave (and, for a try's own writes, the try's fence),
so a concurrent writer that got there first makes the row count come back short instead of
being overwritten.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import CursorResult, Update, update
from sqlalchemy.orm import Session

from state.enums import (
    DAG_RUN_TRANSITIONS,
    TASK_INSTANCE_TRANSITIONS,
    DagRunState,
    TaskInstanceState,
)
from state.models import DagRun, TaskInstance, utcnow


class IllegalTransition(ValueError):
    """A move the transition table does not allow."""


class TryFenced(RuntimeError):
    """A write of a try that no longer holds its task instance (cleared, or a zombie)."""


@dataclass(frozen=True)
class Fence:
    """Names one claimed try: every write of that try is conditional on all three."""

    ti_id: int
    try_number: int
    token: str


def check_allowed(
    table: Mapping[Any, frozenset[Any]], from_states: Iterable[Any], to_state: Any
) -> None:
    for state in from_states:
        if to_state not in table[state]:
            raise IllegalTransition(f"{state} -> {to_state} is not an allowed transition")


def _ti_update(
    ti_ids: Collection[int],
    from_states: Collection[TaskInstanceState],
    to_state: TaskInstanceState,
    values: Mapping[str, Any] | None,
    fence: Fence | None,
    try_number: int | None = None,
) -> Update:
    check_allowed(TASK_INSTANCE_TRANSITIONS, from_states, to_state)
    statement = (
        update(TaskInstance)
        .where(TaskInstance.id.in_(ti_ids), TaskInstance.state.in_(list(from_states)))
        .values(state=to_state, **(values or {}))
        .execution_options(synchronize_session=False)
    )
    if fence is not None:
        statement = statement.where(
            TaskInstance.try_number == fence.try_number,
            TaskInstance.fence_token == fence.token,
        )
    if try_number is not None:
        statement = statement.where(TaskInstance.try_number == try_number)
    return statement


def transition_tis(
    session: Session,
    ti_ids: Collection[int],
    from_states: Collection[TaskInstanceState],
    to_state: TaskInstanceState,
    values: Mapping[str, Any] | None = None,
    fence: Fence | None = None,
    try_number: int | None = None,
) -> int:
    """Move task instances in ``from_states`` to ``to_state``; returns how many moved.

    ``fence`` limits the move to the try holding the task instance; ``try_number`` to one try
    (the claim, before the try has a fence).
    """
    statement = _ti_update(ti_ids, from_states, to_state, values, fence, try_number)
    if not ti_ids:
        return 0
    result: CursorResult[Any] = session.execute(statement)  # type: ignore[assignment]
    return result.rowcount


def transition_tis_returning(
    session: Session,
    ti_ids: Collection[int],
    from_states: Collection[TaskInstanceState],
    to_state: TaskInstanceState,
    values: Mapping[str, Any] | None = None,
    try_number: int | None = None,
) -> list[TaskInstance]:
    """As ``transition_tis``, returning the moved rows as they are after the UPDATE."""
    statement = _ti_update(ti_ids, from_states, to_state, values, None, try_number)
    if not ti_ids:
        return []
    returning = statement.returning(TaskInstance)
    return list(session.scalars(returning, execution_options={"populate_existing": True}))


def transition_run(
    session: Session,
    run_pk: int,
    from_states: Collection[DagRunState],
    to_state: DagRunState,
    values: Mapping[str, Any] | None = None,
) -> bool:
    """Move one DAG run; False when another writer moved it first."""
    check_allowed(DAG_RUN_TRANSITIONS, from_states, to_state)
    statement = (
        update(DagRun)
        .where(DagRun.id == run_pk, DagRun.state.in_(list(from_states)))
        .values(state=to_state, **(values or {}))
        .execution_options(synchronize_session=False)
    )
    result: CursorResult[Any] = session.execute(statement)  # type: ignore[assignment]
    return result.rowcount == 1


def assert_fence(session: Session, fence: Fence) -> None:
    """Refuse the rest of this transaction unless ``fence`` still holds its running try.

    It is an UPDATE (of the heartbeat) rather than a SELECT so that on PostgreSQL it takes the
    row lock: a zombie sweep or a clear that commits first makes this write fail, and one that
    comes later waits for this transaction and sees its result.
    """
    statement = (
        update(TaskInstance)
        .where(
            TaskInstance.id == fence.ti_id,
            TaskInstance.try_number == fence.try_number,
            TaskInstance.fence_token == fence.token,
            TaskInstance.state == TaskInstanceState.RUNNING,
        )
        .values(last_heartbeat=utcnow())
        .execution_options(synchronize_session=False)
    )
    result: CursorResult[Any] = session.execute(statement)  # type: ignore[assignment]
    if result.rowcount != 1:
        raise TryFenced(f"try {fence.try_number} of task instance {fence.ti_id} no longer holds it")
