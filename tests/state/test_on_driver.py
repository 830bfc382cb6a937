"""The statements every try runs, sent by the driver itself (PostgreSQL's dialect,
``state.core.dialects._driver.on_driver``), still fail as SQLAlchemy's do: the outage rule reads
them the same way."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import exc

from state.core.db import statement_scope
from state.core.dialects._driver import on_driver
from state.core.outage import is_store_outage

PG_DATABASE_PREFIX = "tw_on_driver_"


def test_rows_come_back_named(pg_url: str) -> None:
    with statement_scope(pg_url) as session:
        rows = on_driver(session, "SELECT %(n)s::int AS n, 'a' AS name", {"n": 7})
    assert [(row.n, row.name) for row in rows] == [(7, "a")]


def test_a_bad_statement_fails_as_sqlalchemy_fails_it(pg_url: str) -> None:
    with pytest.raises(exc.ProgrammingError) as raised, statement_scope(pg_url) as session:
        on_driver(session, "SELECT no_such_column FROM pg_class", {})
    assert not raised.value.connection_invalidated
    assert not is_store_outage(raised.value)


def test_a_lost_connection_is_an_outage_and_is_not_pooled_again(pg_url: str) -> None:
    with statement_scope(pg_url) as session:
        pid = on_driver(session, "SELECT pg_backend_pid() AS pid", {})[0].pid
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))  # waits for its end

    with pytest.raises(exc.OperationalError) as raised, statement_scope(pg_url) as session:
        on_driver(session, "SELECT 1 AS one", {})

    assert raised.value.connection_invalidated and is_store_outage(raised.value)
    with statement_scope(pg_url) as session:  # a new connection, not the dead one
        assert on_driver(session, "SELECT pg_backend_pid() AS pid", {})[0].pid != pid
