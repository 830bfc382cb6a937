"""The one writer of state columns: conditional UPDATEs checked against the transition table.

Every move of a task instance or DAG run goes through ``transition_tis`` / ``transition_run``:
the UPDATE names the states it expects to leave (and, for a try's own writes, the try's fence),
so a concurrent writer that got there first makes the row count come back short instead of
being overwritten.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ClauseElement,
    ColumnElement,
    CursorResult,
    Row,
    Select,
    Update,
    bindparam,
    update,
)
from sqlalchemy.orm import Session

from state.core.enums import (
    DAG_RUN_MARKS,
    DAG_RUN_TRANSITIONS,
    TASK_INSTANCE_MARKS,
    TASK_INSTANCE_TRANSITIONS,
    DagRunState,
    TaskInstanceState,
)
from state.core.models import RUN_TABLE, TI_TABLE, utcnow

# Statements on the tables, not the mapped classes: Core statements skip the ORM's compile and
# execute layers, which cost a noop try about a millisecond per write on the worker.
_TI = TI_TABLE
_RUN = RUN_TABLE


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


@dataclass(frozen=True)
class Increment:
    """A value that adds to the column's current value within the UPDATE itself."""

    by: int = 1


INCREMENT = Increment()


@dataclass(frozen=True)
class Chosen:
    """Task instances named by a SELECT of their ids instead of a list, so the move needs no
    read before it. The move's statement is cached by the SELECT's identity: a SELECT built
    once (a module constant) is built into a statement once."""

    ids: Select[Any]
    params: Mapping[str, Any]


@functools.lru_cache(maxsize=512)
def _prepared_update(
    from_states: frozenset[TaskInstanceState],
    to_state: TaskInstanceState,
    names: tuple[str, ...],
    expressions: tuple[tuple[str, Any], ...],
    fenced: bool,
    one_try: bool,
    returning: bool | tuple[ColumnElement[Any], ...],
    joined: tuple[ColumnElement[bool], ...],
    also: tuple[ColumnElement[Any], ...],
    chosen: Select[Any] | None = None,
) -> Update:
    """One UPDATE per shape, built once: building one costs a try about a millisecond.

    Plain values are bound parameters. A SQL expression given as a value is part of the key, by
    identity: the cache holds it alive, so its key cannot come to name another expression.
    """
    check_allowed(TASK_INSTANCE_TRANSITIONS, from_states, to_state)
    if chosen is None:
        named = _TI.c.id.in_(bindparam("ti_ids", expanding=True))
    else:
        named = _TI.c.id.in_(chosen)
    statement = (
        update(_TI)
        .where(
            named,
            _TI.c.state.in_(sorted(from_states)),
            *joined,
        )
        .values(
            state=to_state,
            **{name: bindparam(f"value_{name}") for name in names},
            **{name: _expression(name, value) for name, value in expressions},
        )
    )
    if fenced:
        statement = statement.where(
            _TI.c.try_number == bindparam("fence_try"), _TI.c.fence_token == bindparam("token")
        )
    if one_try:
        statement = statement.where(_TI.c.try_number == bindparam("one_try"))
    if not returning:
        return statement
    columns = returning if isinstance(returning, tuple) else tuple(_TI.c)
    return statement.returning(*columns, *also)


def _expression(name: str, value: Any) -> Any:
    return _TI.c[name] + value.by if isinstance(value, Increment) else value


def is_expression(value: Any) -> bool:
    """Whether a move's value is written into its statement (an ``Increment``, a SQL
    expression) rather than bound: such values are part of the statement's shape."""
    return isinstance(value, Increment | ClauseElement)


def _ti_update(
    ti_ids: Collection[int] | Chosen,
    from_states: Collection[TaskInstanceState],
    to_state: TaskInstanceState,
    values: Mapping[str, Any] | None,
    fence: Fence | None,
    try_number: int | None = None,
    returning: bool | tuple[ColumnElement[Any], ...] = False,
    joined: Sequence[ColumnElement[bool]] = (),
    also: Sequence[ColumnElement[Any]] = (),
) -> tuple[Update, dict[str, Any]]:
    """The statement of a move and its parameters; ``returning``: every column of the moved
    rows, or the columns named."""
    values = values or {}
    plain = {name: value for name, value in values.items() if not is_expression(value)}
    statement = _prepared_update(
        frozenset(from_states),
        to_state,
        tuple(sorted(plain)),
        tuple((name, value) for name, value in values.items() if is_expression(value)),
        fence is not None,
        try_number is not None,
        returning,
        tuple(joined),
        tuple(also),
        ti_ids.ids if isinstance(ti_ids, Chosen) else None,
    )
    chosen = ti_ids.params if isinstance(ti_ids, Chosen) else {"ti_ids": list(ti_ids)}
    params = {**chosen, **{f"value_{name}": v for name, v in plain.items()}}
    if fence is not None:
        params.update(fence_try=fence.try_number, token=fence.token)
    if try_number is not None:
        params["one_try"] = try_number
    return statement, params


def ti_move(
    ti_ids: Collection[int] | Chosen,
    from_states: Collection[TaskInstanceState],
    to_state: TaskInstanceState,
    values: Mapping[str, Any] | None = None,
    fence: Fence | None = None,
    *,
    try_number: int | None = None,
    returning: bool | tuple[ColumnElement[Any], ...] = False,
    joined: Sequence[ColumnElement[bool]] = (),
    also: Sequence[ColumnElement[Any]] = (),
) -> tuple[Update, dict[str, Any]]:
    """A move as a statement to compose into a larger one (as a CTE) or to compile once, and
    its parameters; checked against the transition table like every move.

    ``returning``: every column of the moved rows, or the columns named; ``joined``: conditions
    on other tables (PostgreSQL's ``UPDATE … FROM``) whose columns ``also`` returns.
    """
    return _ti_update(
        ti_ids, from_states, to_state, values, fence, try_number, returning, joined, also
    )


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
    (the claim, before the try has a fence). A value may be ``INCREMENT`` (the column plus one).
    """
    statement, params = _ti_update(ti_ids, from_states, to_state, values, fence, try_number)
    if not ti_ids:
        return 0
    result: CursorResult[Any] = session.execute(statement, params)  # type: ignore[assignment]
    return result.rowcount


def transition_tis_returning(
    session: Session,
    ti_ids: Collection[int] | Chosen,
    from_states: Collection[TaskInstanceState],
    to_state: TaskInstanceState,
    values: Mapping[str, Any] | None = None,
    try_number: int | None = None,
) -> Sequence[Row[Any]]:
    """As ``transition_tis``, returning the moved rows (every column) as they are after it."""
    statement, params = _ti_update(ti_ids, from_states, to_state, values, None, try_number, True)
    if not isinstance(ti_ids, Chosen) and not ti_ids:
        return []
    return session.execute(statement, params).all()


def transition_run(
    session: Session,
    run_pk: int,
    from_states: Collection[DagRunState],
    to_state: DagRunState,
    values: Mapping[str, Any] | None = None,
) -> bool:
    """Move one DAG run; False when another writer moved it first."""
    check_allowed(DAG_RUN_TRANSITIONS, from_states, to_state)
    return _move_run(session, run_pk, from_states, to_state, values)


def _move_run(
    session: Session,
    run_pk: int,
    from_states: Collection[DagRunState],
    to_state: DagRunState,
    values: Mapping[str, Any] | None,
) -> bool:
    """The conditional ``UPDATE`` of a run's state, once its table allowed the move."""
    statement = (
        update(_RUN)
        .where(_RUN.c.id == run_pk, _RUN.c.state.in_(list(from_states)))
        .values(state=to_state, **(values or {}))
    )
    result: CursorResult[Any] = session.execute(statement)  # type: ignore[assignment]
    return result.rowcount == 1


def mark_tis(
    session: Session,
    ti_ids: Collection[int],
    from_states: Collection[TaskInstanceState],
    to_state: TaskInstanceState,
    values: Mapping[str, Any] | None = None,
) -> int:
    """A person's mark (success, failed, skipped) of task instances; returns how many moved.

    Checked against the marks' own table (``state.core.enums.TASK_INSTANCE_MARKS``); the fence token
    is dropped, so a try still running can write nothing more and is stopped by its supervisor.
    """
    check_allowed(TASK_INSTANCE_MARKS, from_states, to_state)
    if not ti_ids:
        return 0
    statement = (
        update(_TI)
        .where(_TI.c.id.in_(list(ti_ids)), _TI.c.state.in_(list(from_states)))
        .values(state=to_state, fence_token=None, **(values or {}))
    )
    result: CursorResult[Any] = session.execute(statement)  # type: ignore[assignment]
    return result.rowcount


def mark_run(
    session: Session,
    run_pk: int,
    from_states: Collection[DagRunState],
    to_state: DagRunState,
    values: Mapping[str, Any] | None = None,
) -> bool:
    """A person's mark of a DAG run (``state.core.enums.DAG_RUN_MARKS``); False if it moved
    first."""
    check_allowed(DAG_RUN_MARKS, from_states, to_state)
    return _move_run(session, run_pk, from_states, to_state, values)


def assert_fence(session: Session, fence: Fence) -> None:
    """Refuse the rest of this transaction unless ``fence`` still holds its running try.

    It is an UPDATE (of the heartbeat) rather than a SELECT so that on PostgreSQL it takes the
    row lock: a zombie sweep or a clear that commits first makes this write fail, and one that
    comes later waits for this transaction and sees its result.
    """
    statement = (
        update(_TI)
        .where(
            _TI.c.id == fence.ti_id,
            _TI.c.try_number == fence.try_number,
            _TI.c.fence_token == fence.token,
            _TI.c.state == TaskInstanceState.RUNNING,
        )
        .values(last_heartbeat=utcnow())
    )
    result: CursorResult[Any] = session.execute(statement)  # type: ignore[assignment]
    if result.rowcount != 1:
        raise TryFenced(f"try {fence.try_number} of task instance {fence.ti_id} no longer holds it")
