"""The scheduler through outages: one log line each way, and the messages the broker missed.

The store is a real SQLite file, or a PostgreSQL URL where nothing listens (the outage); the
broker is the far side, faked: a publish that raises what kombu raises when Redis is away.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from kombu.exceptions import OperationalError as BrokerUnavailable

from scheduler import loop
from scheduler.loop import Scheduler
from state.engine.scheduling import Enqueue
from tests.scheduler.test_liveness_faults import STUB_APP, make_home
from tests.state.harness import Home

__all__ = ["make_home"]  # the fixture, imported for pytest
NOWHERE = "postgresql://postgres@127.0.0.1:1/none"  # nothing listens on port 1


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "tradewind.scheduler"]


def test_a_store_outage_is_one_line_when_it_starts_and_one_when_it_ends(
    make_home: Callable[..., Home], caplog: pytest.LogCaptureFixture
) -> None:
    home = make_home()
    home.sync()
    scheduler = Scheduler(home.settings, app=STUB_APP)  # type: ignore[arg-type]
    scheduler.sync_if_changed(force=True)
    scheduler.url = NOWHERE
    with caplog.at_level(logging.INFO, "tradewind.scheduler"):
        for _ in range(3):
            scheduler._loop_once()
        scheduler.url = home.url
        scheduler._loop_once()
    lines = _lines(caplog)
    assert len(lines) == 2, lines
    assert lines[0].startswith(
        "scheduler: the SQL store is unavailable, retrying: OperationalError"
    )
    assert lines[1].startswith("scheduler: the SQL store is back after ")


def test_tries_the_broker_missed_are_sent_once_it_is_back(
    make_home: Callable[..., Home],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    home = make_home()
    sent: list[Enqueue] = []
    broker = {"away": True}

    def publish(_app: Any, ready: list[Enqueue]) -> int:
        if broker["away"]:
            raise BrokerUnavailable("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        sent.extend(ready)
        return len(ready)

    monkeypatch.setattr(loop, "publish_many", publish)
    scheduler = Scheduler(home.settings, app=STUB_APP)  # type: ignore[arg-type]
    home.sync()
    home.trigger("lively", run_id="r1")
    with caplog.at_level(logging.INFO, "tradewind.scheduler"):
        assert scheduler.run_once().queued == 1  # queued in SQL; its message not sent
        scheduler.run_once()
        assert sent == []
        broker["away"] = False
        scheduler.run_once()
        scheduler.run_once()
    assert [(queued.task_id, queued.try_number) for queued in sent] == [("work", 1)]  # once
    outage = [line for line in _lines(caplog) if "the broker" in line]
    assert len(outage) == 2 and outage[1].startswith("scheduler: the broker is back after")
