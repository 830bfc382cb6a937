"""A scheduler waiting between passes wakes as soon as a run is created (PostgreSQL)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import psycopg
import pytest
from sqlalchemy import select

from scheduler import loop
from scheduler.loop import LoopStats, Scheduler
from state.core.db import get_engine, session_scope
from state.core.models import TaskInstance
from state.engine import run_wake
from state.engine.run_wake import RunWakeups
from tests.scheduler.conftest import create_schema, new_run, store_dag, wide
from tradewind.settings import Settings

pytestmark = pytest.mark.integration
PG_DATABASE_PREFIX = "tw_wake_"
#: Far longer than a wake-up takes even on a loaded machine: a wait that lasts it was not woken.
LONG_SECONDS = 30.0


@pytest.fixture
def url(pg_url: str) -> str:
    create_schema(pg_url)
    with session_scope(pg_url) as session:
        store_dag(session, "fan", wide(3))
    return pg_url


@pytest.fixture
def wakeups(url: str) -> Iterator[RunWakeups]:
    made = RunWakeups(url)
    yield made
    made.close()


def _waiting(
    wakeups: RunWakeups, stop: threading.Event | None = None
) -> tuple[ThreadPoolExecutor, Future[bool]]:
    pool = ThreadPoolExecutor(1)
    return pool, pool.submit(wakeups.wait, LONG_SECONDS, stop or threading.Event())


def test_a_created_run_wakes_the_wait(url: str, wakeups: RunWakeups) -> None:
    assert wakeups.wait(0.01, threading.Event()) is False  # listening from now on
    pool, woken = _waiting(wakeups)
    with session_scope(url) as session:
        new_run(session, "fan", "r1")
    assert woken.result(timeout=LONG_SECONDS / 2) is True
    pool.shutdown()


def test_runs_created_together_wake_one_pass_and_a_rolled_back_run_none(
    url: str, wakeups: RunWakeups
) -> None:
    wakeups.wait(0.01, threading.Event())
    with session_scope(url) as session:
        for number in range(3):
            new_run(session, "fan", f"r{number}")
    with session_scope(url) as session:
        new_run(session, "fan", "r9")
        session.rollback()
    assert wakeups.wait(LONG_SECONDS, threading.Event()) is True
    assert wakeups.wait(0.3, threading.Event()) is False


def test_a_lost_listening_connection_falls_back_to_the_plain_wait(
    url: str, wakeups: RunWakeups, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_wake, "RELISTEN_SECONDS", 0.0)
    wakeups.wait(0.01, threading.Event())
    _terminate_backends(url, "LISTEN")
    assert wakeups.wait(0.3, threading.Event()) is False  # no error: the interval is waited
    wakeups.wait(0.01, threading.Event())  # listening again
    with session_scope(url) as session:
        new_run(session, "fan", "r1")
    assert wakeups.wait(LONG_SECONDS, threading.Event()) is True


def test_a_pooled_connection_the_server_dropped_is_not_listened_on(
    url: str, wakeups: RunWakeups, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_wake, "RELISTEN_SECONDS", 0.0)
    with get_engine(url).connect():
        pass  # one connection idle in the pool, taken again without a ping (idle < 10 s)
    _terminate_backends(url, "")
    assert wakeups.wait(0.05, threading.Event()) is False  # its LISTEN failed: no error
    wakeups.wait(0.01, threading.Event())  # a new connection listens
    with session_scope(url) as session:
        new_run(session, "fan", "r1")
    assert wakeups.wait(LONG_SECONDS, threading.Event()) is True


def _terminate_backends(url: str, query_prefix: str) -> None:
    """End the database's backends whose last query starts so, and wait until they are gone."""
    name = url.rsplit("/", 1)[1]
    backends = "FROM pg_stat_activity WHERE datname = %s AND query LIKE %s"
    with psycopg.connect(url.rsplit("/", 1)[0] + "/test", autocommit=True) as admin:
        admin.execute(f"SELECT pg_terminate_backend(pid) {backends}", (name, f"{query_prefix}%"))
        for _ in range(300):  # until they have exited (their sockets closed)
            if admin.execute(
                f"SELECT count(*) {backends}", (name, f"{query_prefix}%")
            ).fetchone() == (0,):
                break
            threading.Event().wait(0.1)


def test_a_stop_ends_the_wait(wakeups: RunWakeups) -> None:
    stop = threading.Event()
    pool, waiting = _waiting(wakeups, stop)
    stop.set()
    assert waiting.result(timeout=LONG_SECONDS / 2) is False
    pool.shutdown()


def test_the_scheduler_queues_a_new_run_without_waiting_for_its_interval(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loop, "publish_many", lambda app, ready: len(ready))
    settings = Settings(database_url=url, scheduler_interval_seconds=LONG_SECONDS * 4)
    scheduler = Scheduler(settings, app=object())  # type: ignore[arg-type]
    scheduler.sync_if_changed = lambda force=False: None  # type: ignore[method-assign]
    passed, run_once = threading.Event(), scheduler.run_once

    def first_pass_then_flag() -> LoopStats:
        stats = run_once()
        passed.set()
        return stats

    scheduler.run_once = first_pass_then_flag  # type: ignore[method-assign]
    stop = threading.Event()
    thread = threading.Thread(target=scheduler.run_forever, args=(stop,))
    thread.start()
    try:
        assert passed.wait(LONG_SECONDS)  # the run comes after the first pass, before the next
        with session_scope(url) as session:
            new_run(session, "fan", "r1")

        def queued() -> int:
            with session_scope(url) as session:
                states = session.scalars(select(TaskInstance.state).filter_by(run_id="r1"))
                return sum(state == "queued" for state in states)

        for _ in range(int(LONG_SECONDS * 10)):
            if queued() == 3:
                break
            stop.wait(0.1)
        assert queued() == 3  # long before the scheduler's next pass by its interval
    finally:
        stop.set()
        thread.join(LONG_SECONDS)
    assert not thread.is_alive()
