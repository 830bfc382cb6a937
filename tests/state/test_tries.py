"""Every try kept: a retried try is copied to the history with its end, a cleared one with the
clear, and ``tries_of`` lists them all with their own states, times and hosts.

Tries are claimed and ended with the store's functions a supervisor calls, on SQLite and on
PostgreSQL (whose end takes another path: one statement, unless the try is retried).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select, update

from broker_config import message_of
from state.core.db import session_scope, statement_scope
from state.core.enums import TaskInstanceState
from state.core.models import TaskInstance, TaskInstanceHistory
from state.engine.liveness import give_up_try
from state.engine.outcomes import Failed, Succeeded
from state.engine.runs import clear_task_instances
from state.engine.try_life import HeldTry, claim_try
from state.records import tries_of
from tests.state.harness import Home, end_claimed, tradewind_home

TI = TaskInstanceState
PG_DATABASE_PREFIX = "tw_tries_"

RETRYING = """
import datetime as dt

from tradewind import DAG, task

@task(retries=2, retry_delay=dt.timedelta(minutes=5))
def flaky():
    pass

with DAG("retrying"):
    flaky()
"""


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def home(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Home]:
    env = {} if request.param == "sqlite" else {"database_url": request.getfixturevalue("pg_url")}
    with tradewind_home(tmp_path, monkeypatch, **env) as made:
        made.write_dag(RETRYING)
        assert made.sync().import_errors == {}
        yield made


def _claim_next(home: Home, run_pk: int) -> HeldTry:
    """Make the task's retry due, queue it and claim it."""
    with session_scope(home.url) as session:
        past = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
        session.execute(update(TaskInstance).values(next_retry_at=past))
    (queued,) = home.schedule(run_pk)
    with statement_scope(home.url) as session:
        held = claim_try(session, message_of(queued))
    assert isinstance(held, HeldTry)
    return held


def _tries(home: Home, run_pk: int) -> list[tuple[int, str | None, bool, bool]]:
    """(number, state, has a start, has a host) of each try of ``flaky``."""
    ti = home.ti(run_pk, "flaky")
    with session_scope(home.url) as session:
        return [
            (t.try_number, t.state, t.start_date is not None, t.hostname is not None)
            for t in tries_of(session, ti)
        ]


def test_a_retried_try_keeps_its_state_times_host_and_error(home: Home) -> None:
    run_pk = home.trigger("retrying")
    (queued,) = home.schedule(run_pk)
    with statement_scope(home.url) as session:
        first = claim_try(session, message_of(queued))
    assert isinstance(first, HeldTry)
    assert end_claimed(home.url, first, Failed("boom")).recorded
    assert home.states(run_pk)["flaky"] == TI.UP_FOR_RETRY
    assert _tries(home, run_pk) == [(1, "failed", True, True)]

    second = _claim_next(home, run_pk)
    assert _tries(home, run_pk) == [(1, "failed", True, True), (2, "running", True, True)]
    assert end_claimed(home.url, second, Succeeded()).recorded
    assert _tries(home, run_pk) == [(1, "failed", True, True), (2, "success", True, True)]
    with session_scope(home.url) as session:
        kept = session.scalars(select(TaskInstanceHistory)).one()
    assert (kept.try_number, kept.error, kept.end_date is not None) == (1, "boom", True)


def test_a_clear_keeps_the_try_it_resets(home: Home) -> None:
    run_pk = home.trigger("retrying")
    (queued,) = home.schedule(run_pk)
    with statement_scope(home.url) as session:
        held = claim_try(session, message_of(queued))
    assert isinstance(held, HeldTry)
    assert end_claimed(home.url, held, Succeeded()).recorded
    with session_scope(home.url) as session:
        clear_task_instances(session, home.run(run_pk))
    assert home.states(run_pk)["flaky"] == TI.NONE
    assert _tries(home, run_pk) == [(1, "success", True, True)]  # kept, not the reset row
    with session_scope(home.url) as session:  # a clear twice keeps it once
        clear_task_instances(session, home.run(run_pk))
    (queued,) = home.schedule(run_pk)
    assert _tries(home, run_pk) == [(1, "success", True, True), (2, "queued", False, False)]


def test_a_zombie_given_up_keeps_its_try(home: Home) -> None:
    run_pk = home.trigger("retrying")
    (queued,) = home.schedule(run_pk)
    with statement_scope(home.url) as session:
        assert isinstance(claim_try(session, message_of(queued)), HeldTry)
    with session_scope(home.url) as session:
        ti = session.get(TaskInstance, queued.ti_id)
        assert ti is not None
        now = dt.datetime.now(dt.UTC)
        assert give_up_try(session, ti, "no heartbeat", now, {}) == TI.UP_FOR_RETRY
    assert _tries(home, run_pk) == [(1, "failed", True, True)]
