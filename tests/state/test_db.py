"""The engine's pool: connections in steady use are not pinged; a stale idle one is replaced."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import text

import state.core.db
import state.core.dialects.postgresql
from state.core.db import get_engine, session_scope
from tests.conftest import PG_ADMIN_URL


def backend_pid(url: str) -> int:
    with session_scope(url) as session:
        return int(session.scalar(text("SELECT pg_backend_pid()")))


@pytest.mark.integration
def test_an_idle_connection_killed_by_the_server_is_replaced_before_use(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = backend_pid(pg_url)
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [first])
    monkeypatch.setattr(state.core.dialects.postgresql, "IDLE_SECONDS_BEFORE_PING", 0.0)

    second = backend_pid(pg_url)  # no error: the ping found it dead and the pool opened another

    assert second != first


@pytest.mark.integration
def test_the_servers_end_of_a_connection_gives_up_on_a_silent_client_as_ours_does(
    pg_url: str,
) -> None:
    # A connection this side dropped during a network cut must not leave its backend holding
    # row locks for the two hours of the server's default keepalive (tests/hosts/test_store_flap).
    with session_scope(pg_url) as session:
        names = ("tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count")
        shown = [session.scalar(text(f"SHOW {name}")) for name in (*names, "tcp_user_timeout")]

    assert shown == ["3", "3", "2", "10000"]  # from the 10 s network bound (state.core.db)


@pytest.mark.integration
@pytest.mark.parametrize(("idle_seconds", "expected_pings"), [(10.0, 0), (0.0, 5)])
def test_only_a_connection_idle_past_the_threshold_is_pinged(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, idle_seconds: float, expected_pings: int
) -> None:
    engine = get_engine(pg_url)
    backend_pid(pg_url)
    pings: list[object] = []
    ping = engine.dialect.do_ping
    monkeypatch.setattr(engine.dialect, "do_ping", lambda conn: pings.append(conn) or ping(conn))
    monkeypatch.setattr(state.core.dialects.postgresql, "IDLE_SECONDS_BEFORE_PING", idle_seconds)

    for _ in range(5):
        backend_pid(pg_url)

    assert len(pings) == expected_pings


def _open_and_write(url: str, start_at: float) -> None:
    """In a fresh process: wait for the shared start time, then open the store and write."""
    state.core.db._ENGINES.clear()  # the parent's engine is not this process's
    while time.time() < start_at:
        pass
    with get_engine(url).begin() as connection:
        connection.execute(text(f"CREATE TABLE IF NOT EXISTS t{os.getpid()} (x INTEGER)"))
        time.sleep(0.02)


def test_two_processes_opening_a_new_sqlite_store_at_once_both_get_in(tmp_path: Path) -> None:
    # Switching a new file to WAL raced: one of the two failed at once, "database is locked".
    context = multiprocessing.get_context("fork")
    for attempt in range(60):
        url = f"sqlite:///{tmp_path / f'{attempt}.db'}"
        start_at = time.time() + 0.05
        openers = [
            context.Process(
                target=_open_and_write, args=(url, start_at + k * 0.0003 * (attempt % 5))
            )
            for k in range(2)
        ]
        for opener in openers:
            opener.start()
        for opener in openers:
            opener.join(60)
        assert [opener.exitcode for opener in openers] == [0, 0], f"attempt {attempt}"
