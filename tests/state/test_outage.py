"""Riding out an outage (state/core/outage.py): backoff, the bound, the probe, one line per outage.

The clock and the sleep are the test's (a list of sleeps instead of waiting); the errors are the
ones SQLAlchemy raises for a lost connection. The real outages are in tests/integration/
test_outages_*.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import psycopg
import pytest
from sqlalchemy.exc import IntegrityError, OperationalError

from state.core import outage
from state.core.outage import (
    Backoff,
    BeatSchedule,
    OutageLog,
    Retry,
    StoreUnavailable,
    is_store_outage,
    outage_budget,
    ride_out,
)


def lost_connection() -> OperationalError:
    return OperationalError("SELECT 1", {}, Exception("server closed the connection\nhint"))


class FakeTime:
    """A clock that moves only when the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def failing(times: int, result: str = "done") -> Callable[[], str]:
    calls = {"n": 0}

    def action() -> str:
        calls["n"] += 1
        if calls["n"] <= times:
            raise lost_connection()
        return result

    action.calls = calls  # type: ignore[attr-defined]
    return action


def test_the_backoff_doubles_up_to_its_cap_with_half_of_each_step_drawn() -> None:
    backoff = Backoff(first_seconds=0.1, max_seconds=1.0)
    assert [backoff.delay(n, draw=lambda: 0.0) for n in range(6)] == [
        0.05,
        0.1,
        0.2,
        0.4,
        0.5,
        0.5,
    ]
    assert [backoff.delay(n, draw=lambda: 1.0) for n in range(6)] == [0.1, 0.2, 0.4, 0.8, 1, 1]
    assert backoff.delay(10_000, draw=lambda: 0.5) == 0.75  # no overflow, however long


def test_an_outage_is_waited_out_and_logged_once_each_way(caplog: pytest.LogCaptureFixture) -> None:
    time = FakeTime()
    action = failing(times=5)
    retry = Retry("recording the end", sleep=time.sleep, clock=time.clock, budget=30)
    with caplog.at_level(logging.WARNING, "tradewind.outage"):
        assert ride_out(action, retry) == "done"
    assert action.calls["n"] == 6  # type: ignore[attr-defined]
    assert len(time.sleeps) == 5 and all(0 < s <= 1.0 for s in time.sleeps)
    assert [r.getMessage() for r in caplog.records] == [
        "recording the end: the SQL store is unavailable, retrying: "
        "OperationalError: (builtins.Exception) server closed the connection",
        f"recording the end: the SQL store is back after {sum(time.sleeps):.1f}s",
    ]


def test_an_error_that_is_not_an_outage_is_raised_at_once() -> None:
    def refused() -> None:
        raise IntegrityError("INSERT", {}, Exception("duplicate key"))

    time = FakeTime()
    with pytest.raises(IntegrityError):
        ride_out(refused, Retry("x", sleep=time.sleep, clock=time.clock))
    assert time.sleeps == []
    assert not is_store_outage(IntegrityError("INSERT", {}, Exception("duplicate key")))


def test_past_its_bound_the_wait_gives_up(caplog: pytest.LogCaptureFixture) -> None:
    time = FakeTime()
    with pytest.raises(StoreUnavailable, match=r"^claiming t: the SQL store still unavailable"):
        ride_out(
            failing(times=10_000), Retry("claiming t", budget=5, sleep=time.sleep, clock=time.clock)
        )
    assert 4 <= sum(time.sleeps) <= 5


def test_the_budget_of_the_process_is_the_default_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(outage._budget, "seconds", 2.0)
    time = FakeTime()
    with pytest.raises(StoreUnavailable, match="the bound is 2s"):
        ride_out(failing(times=10_000), Retry("x", sleep=time.sleep, clock=time.clock))


def test_with_a_probe_the_work_runs_again_only_once_the_store_answers() -> None:
    time = FakeTime()
    probe = failing(times=3)
    action = failing(times=1)
    retry = Retry("x", probe=probe, sleep=time.sleep, clock=time.clock, budget=30)
    assert ride_out(action, retry) == "done"
    assert action.calls["n"] == 2  # type: ignore[attr-defined]
    assert probe.calls["n"] == 4  # type: ignore[attr-defined]


def test_a_try_gives_up_a_kill_grace_before_the_zombie_threshold() -> None:
    assert outage_budget(30, 5) == 25
    assert outage_budget(4, 3) == 2  # never less than half the threshold


def test_heartbeats_come_sooner_through_an_outage_until_the_try_is_past_saving(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(outage._budget, "seconds", 10.0)
    beats = BeatSchedule(5.0, OutageLog("heartbeats"), last_success=0.0)
    assert beats.succeeded(1.0) == 6.0
    due = beats.failed(lost_connection(), 6.0)
    assert due is not None and 6.0 < due <= 6.1
    assert beats.failed(lost_connection(), 10.9) is not None  # 9.9 s since the last success
    assert beats.failed(lost_connection(), 11.1) is None  # past the bound: give the try up
    assert beats.succeeded(12.0) == 17.0 and beats.attempt == 0


def test_a_statement_the_server_refused_is_no_outage() -> None:
    """A lock timeout is the server's answer, not its absence: the write fails at once (an
    iterable task keeps the round for its next write), it is not waited out."""
    lock_timeout = OperationalError("UPDATE", {}, psycopg.errors.LockNotAvailable("lock timeout"))
    assert not is_store_outage(lock_timeout)
    gone = OperationalError("SELECT 1", {}, psycopg.errors.AdminShutdown("terminating"))
    assert is_store_outage(gone)
    refused = OperationalError("connect", {}, psycopg.OperationalError("connection refused"))
    assert is_store_outage(refused)  # the driver's own error: no SQLSTATE
