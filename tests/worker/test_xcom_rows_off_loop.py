"""The supervisor reads and writes XCom rows off its loop (worker/supervisor/background.py).

A 64 MiB value keeps the database busy for over a second; done in the loop, that write held up
the try's heartbeats (2.2 to 2.5 s gaps against a 1 s interval). Here the row write (or read) is
made to take longer than the zombie threshold before it touches the database: heartbeats must
keep coming meanwhile, and the value must still arrive where it belongs.

Real forked Python tasks and a real supervisor (``worker.supervisor.execute.execute``), SQLite.
"""

from __future__ import annotations

import json
import selectors
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from broker_config import message_of
from state.core.db import session_scope
from state.core.models import XCom
from tests.state.harness import Home, tradewind_home
from tests.worker.xcom_support import PIPELINE_DAG, watching
from worker.supervisor.background import Background
from worker.supervisor.execute import execute
from worker.xcom import serving

HEARTBEAT_SECONDS = 0.5
ZOMBIE_SECONDS = 2.5
SLOW_SECONDS = 1.5 * ZOMBIE_SECONDS


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    env = {
        "heartbeat_seconds": str(HEARTBEAT_SECONDS),
        "zombie_threshold_seconds": str(ZOMBIE_SECONDS),
    }
    with tradewind_home(tmp_path, monkeypatch, **env) as made:
        made.write_dag(PIPELINE_DAG)
        assert made.sync().import_errors == {}
        yield made


def slowed(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function``, after a pause longer than the zombie threshold (before any statement)."""

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(SLOW_SECONDS)
        return function(*args, **kwargs)

    return slow


def run_one_by_one(home: Home, watched_task: str) -> tuple[int, list[str], Any]:
    run_pk = home.trigger("pipeline")
    pending, outcomes = home.schedule(run_pk), []
    with watching(home.url, watched_task, ZOMBIE_SECONDS) as watch:
        while pending:
            outcomes.append(execute(message_of(pending.pop(0)), home.settings, pending.extend))
            pending = pending or home.schedule(run_pk)
    return run_pk, outcomes, watch


def test_heartbeats_go_on_while_a_push_is_written(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(serving, "write_xcom", slowed(serving.write_xcom))
    _, outcomes, watch = run_one_by_one(home, "produce")
    assert outcomes == ["success", "success"]
    assert len(watch.heartbeats) >= 4  # several beats while the row waited ~3.75 s
    assert watch.worst_gap_seconds() < ZOMBIE_SECONDS
    assert not watch.zombie_seen
    with session_scope(home.url) as session:
        values = session.scalars(select(XCom.value).where(XCom.task_id == "consume")).all()
    assert [json.loads(value) for value in values] == [50]


def test_heartbeats_go_on_while_a_pull_is_read(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serving, "read_xcoms", slowed(serving.read_xcoms))
    run_pk, outcomes, watch = run_one_by_one(home, "consume")
    assert outcomes == ["success", "success"]
    assert len(watch.heartbeats) >= 4
    assert watch.worst_gap_seconds() < ZOMBIE_SECONDS
    assert not watch.zombie_seen
    assert home.ti(run_pk, "consume").try_number == 1


def test_outcomes_come_back_in_the_order_the_work_was_given() -> None:
    seen: list[Any] = []
    with selectors.DefaultSelector() as selector:
        background = Background()
        background.register(selector)
        background.submit(lambda: time.sleep(0.2) or "slow", lambda outcome: seen.append(outcome()))
        background.submit(lambda: "fast", lambda outcome: seen.append(outcome()))
        background.submit(_fails, lambda outcome: seen.append(_raised(outcome)))
        while background.pending:
            for key, _ in selector.select(5):
                key.data(selector, key.fileobj)
        background.close()
        background.close()  # twice is fine: the supervisor closes on every way out
    assert seen == ["slow", "fast", "ValueError: bad row"]


def _fails() -> None:
    raise ValueError("bad row")


def _raised(outcome: Callable[[], Any]) -> str:
    with pytest.raises(ValueError) as caught:
        outcome()
    return f"{caught.type.__name__}: {caught.value}"
