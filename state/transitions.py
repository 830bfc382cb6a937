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
    Dialect,
    Executable,
    Row,
    Select,
    Update,
    bindparam,
    exc,
    update,
)
from sqlalchemy.orm import Session

from state.enums import (
    DAG_RUN_MARKS,
    DAG_RUN_TRANSITIONS,
    TASK_INSTANCE_MARKS,
    TASK_INSTANCE_TRANSITIONS,
    DagRunState,
    TaskInstanceState,
)
from state.models import RUN_TABLE, TI_TABLE, utcnow

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
    read before it. ``ids`` must be built once (a module constant): statements are cached by it."""

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


def _is_expression(value: Any) -> bool:
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
    plain = {name: value for name, value in values.items() if not _is_expression(value)}
    statement = _prepared_update(
        frozenset(from_states),
        to_state,
        tuple(sorted(plain)),
        tuple((name, value) for name, value in values.items() if _is_expression(value)),
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
) -> tuple[Update, dict[str, Any]]:
    """A move as a statement to compose into a larger one (as a CTE), and its parameters.

    Checked against the transition table like every move; the statement is the one cached for
    its shape, so a statement built from it can be cached by it. Two moves composed must not
    share a parameter name (a ``value_<column>`` of both, a fence, or ids given as a list).
    """
    return _ti_update(ti_ids, from_states, to_state, values, fence)


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
    joined: Sequence[ColumnElement[bool]] = (),
    also: Sequence[ColumnElement[Any]] = (),
) -> Sequence[Row[Any]]:
    """As ``transition_tis``, returning the moved rows (every column) as they are after it.

    ``joined`` are conditions joining other tables (``UPDATE … FROM``) whose columns ``also``
    names in the rows returned (PostgreSQL; SQLite cannot return another table's columns).
    Both must be built once (module constants): the prepared statement is cached by them.
    """
    statement, params = _ti_update(
        ti_ids, from_states, to_state, values, None, try_number, True, joined, also
    )
    if not isinstance(ti_ids, Chosen) and not ti_ids:
        return []
    return session.execute(statement, params).all()


def transition_tis_compiled_once(
    session: Session,
    ti_ids: Chosen,
    from_states: Collection[TaskInstanceState],
    to_state: TaskInstanceState,
    values: Mapping[str, Any],
    try_number: int | None = None,
    returned: tuple[ColumnElement[Any], ...] = (),
    joined: Sequence[ColumnElement[bool]] = (),
    also: Sequence[ColumnElement[Any]] = (),
) -> Sequence[Row[Any]]:
    """``transition_tis_returning`` on PostgreSQL, sent as SQL text compiled once
    (``driver_sql``) and run by the driver (``on_driver``), for the statements every try runs;
    it returns the columns ``returned`` of the moved rows (every column, when empty) and
    ``also``. The rows are as the driver gives them: no SQLAlchemy type reads them (a datetime
    is in the connection's zone, not made UTC), and values are sent as given. ``ti_ids`` names
    the rows by a SELECT with no list parameter: one text serves every call.
    """
    statement, params = _ti_update(
        ti_ids, from_states, to_state, values, None, try_number, returned or True, joined, also
    )
    return execute_compiled_once(session, statement, params)


def execute_compiled_once(
    session: Session, statement: Executable, params: Mapping[str, Any]
) -> list[Any]:
    """``statement`` with ``params``, compiled once (``driver_sql``) and run by the driver
    (``on_driver``): PostgreSQL only."""
    sql, constants = driver_sql(statement, session.get_bind().dialect, tuple(sorted(params)))
    return on_driver(session, sql, {**constants, **params})


def on_driver(session: Session, sql: str, params: Mapping[str, Any]) -> list[Any]:
    """``sql`` (a ``driver_sql`` text) run by psycopg itself on the session's PostgreSQL
    connection; its rows as named tuples, read by no SQLAlchemy type.

    SQLAlchemy's execution and result layers around one statement cost a supervisor more CPU
    than the driver's own execution of it (0.15-0.25 ms of ~0.35 ms for a claim): they are
    skipped, but not what they guarantee. The engine's ``before_cursor_execute`` listeners still
    see the statement (the tests count statements with them), and a driver error is raised as
    SQLAlchemy raises it (``DBAPIError``), its connection invalidated when it was lost, so that
    the callers' outage rule (``state.outage``) reads it as any other.
    """
    connection = session.connection()
    dialect = connection.dialect
    driver: Any = connection.connection.driver_connection
    errors = dialect.loaded_dbapi.Error
    try:
        with driver.cursor(row_factory=_named_rows()) as cursor:
            for listener in connection.dispatch.before_cursor_execute:
                sql, params = listener(connection, cursor, sql, params, None, False)
            cursor.execute(sql, params)
            return list(cursor.fetchall())
    except errors as error:
        lost = dialect.is_disconnect(error, driver, None)
        if lost:
            connection.invalidate(error)
        raise exc.DBAPIError.instance(
            sql, params, error, errors, connection_invalidated=lost, dialect=dialect
        ) from error


@functools.cache
def _named_rows() -> Any:
    # Imported here: psycopg is installed with PostgreSQL support only (``.[postgres]``).
    from psycopg.rows import namedtuple_row

    return namedtuple_row


@functools.lru_cache(maxsize=64)  # per dialect: an entry per statement of every try
def driver_sql(
    statement: Executable, dialect: Dialect, names: tuple[str, ...]
) -> tuple[str, dict[str, Any]]:
    """``statement``'s SQL text for ``dialect`` and the values it binds itself (its constants),
    given the names of the parameters its caller binds.

    Compiled once: executed as a SQLAlchemy statement, each execution builds the statement's
    cache key anew, a walk over its whole tree that costs a supervisor more CPU than the rest of
    the statement's execution (~2 ms a hop where every page it touches after a fork is a
    copy-on-write fault). Its lists (``IN`` of states) are expanded into the text here, once.
    """
    compiled = statement.compile(dialect=dialect)  # type: ignore[attr-defined]
    expanded = compiled.construct_expanded_state(dict.fromkeys(names))
    constants = {k: v for k, v in expanded.parameters.items() if k not in names}
    return expanded.statement, constants


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

    Checked against the marks' own table (``state.enums.TASK_INSTANCE_MARKS``); the fence token
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
    """A person's mark of a DAG run (``state.enums.DAG_RUN_MARKS``); False if it moved first."""
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
