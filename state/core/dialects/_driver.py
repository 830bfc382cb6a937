"""PostgreSQL's hot statements as SQL texts compiled once and run by psycopg itself.

Private to the PostgreSQL dialect (``state.core.dialects.postgresql``): a statement is compiled the
first time its name is run, and its text is kept under that name. The name says the statement's
shape (which move, which values are written into it): a caller never has to keep an object
alive or unchanged for the cache to hold.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from sqlalchemy import Dialect, Executable, exc
from sqlalchemy.orm import Session


class CompiledOnce:
    """SQL texts by statement name, each compiled the first time it is run."""

    def __init__(self) -> None:
        # Two threads compiling one name at once store the same text: no lock needed.
        self._texts: dict[Hashable, tuple[str, dict[str, Any]]] = {}

    def run(
        self,
        session: Session,
        name: Hashable,
        build: Callable[[], Executable],
        params: Mapping[str, Any],
    ) -> list[Any]:
        """The statement named ``name`` (``build`` makes it, the first time) run with ``params``
        on the driver; its rows as named tuples."""
        text = self._texts.get(name)
        if text is None:
            dialect = session.get_bind().dialect
            text = self._texts[name] = driver_sql(build(), dialect, tuple(sorted(params)))
        sql, constants = text
        return on_driver(session, sql, {**constants, **params})


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


def on_driver(session: Session, sql: str, params: Mapping[str, Any]) -> list[Any]:
    """``sql`` (a ``driver_sql`` text) run by psycopg itself on the session's PostgreSQL
    connection; its rows as named tuples, read by no SQLAlchemy type.

    SQLAlchemy's execution and result layers around one statement cost a supervisor more CPU
    than the driver's own execution of it (0.15-0.25 ms of ~0.35 ms for a claim): they are
    skipped, but not what they guarantee. The engine's ``before_cursor_execute`` listeners still
    see the statement (the tests count statements with them), and a driver error is raised as
    SQLAlchemy raises it (``DBAPIError``), its connection invalidated when it was lost, so that
    the callers' outage rule (``state.core.outage``) reads it as any other.
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
