"""The Celery task: a malformed message is logged in one line and dropped, never executed."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from broker_config import EXECUTE_TASK_NAME, TaskInstanceMessage
from tradewind.settings import reload_settings
from worker import celery_app

VALID = {"ti_id": 7, "try_number": 2, "dag_id": "d", "run_id": "r", "task_id": "t", "map_index": -1}


@pytest.fixture
def executed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """What reached ``execute``: nothing, for a message that must be dropped."""
    calls: list[tuple[Any, ...]] = []

    def fake_execute(message: Any, settings: Any, publish: Any) -> str:
        calls.append((message, settings, publish))
        return "success"

    monkeypatch.setattr(celery_app, "execute", fake_execute)
    monkeypatch.setattr(celery_app, "get_settings", lambda: "the settings")
    return calls


def with_(**changes: Any) -> dict[str, Any]:
    return {**VALID, **changes}


def without(field: str) -> dict[str, Any]:
    return {k: v for k, v in VALID.items() if k != field}


MALFORMED = {
    "a string": "ti 7 try 2",
    "a list": [7, 2, "d", "r", "t"],
    "a number": 7,
    "nothing": None,
    "an empty dict": {},
    "no ti_id": without("ti_id"),
    "no try_number": without("try_number"),
    "no task_id": without("task_id"),
    "ti_id a word": with_(ti_id="seven"),
    "ti_id a numeric string": with_(ti_id="7"),
    "ti_id a bool": with_(ti_id=True),
    "try_number a bool": with_(try_number=True),
    "try_number a float": with_(try_number=2.0),
    "ti_id zero": with_(ti_id=0),
    "try_number zero": with_(try_number=0),
    "dag_id a number": with_(dag_id=5),
    "map_index a list": with_(map_index=[1]),
    "an extra field": with_(command="rm -rf /"),
}


@pytest.mark.parametrize("message", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_message_is_dropped_with_one_log_line(
    message: Any, executed: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    stub = SimpleNamespace(app="the app")
    with caplog.at_level(logging.INFO):
        assert celery_app.execute_task_instance(stub, message=message) == "dropped"
    assert executed == []
    [record] = caplog.records
    assert (record.name, record.levelno) == ("tradewind.worker", logging.ERROR)
    text = record.getMessage()
    assert text.startswith("dropped broker message")
    assert "\n" not in text


def test_unexpected_task_arguments_are_dropped_with_one_log_line(
    executed: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    stub = SimpleNamespace(app="the app")
    with caplog.at_level(logging.INFO):
        outcome = celery_app.execute_task_instance(stub, message=VALID, code="print(1)")
    assert outcome == "dropped"
    assert executed == []
    [record] = caplog.records
    assert record.getMessage().startswith("dropped broker message")
    assert "'code'" in record.getMessage()
    assert "\n" not in record.getMessage()


def test_a_positional_message_is_dropped(executed: list[Any]) -> None:
    stub = SimpleNamespace(app="the app")
    assert celery_app.execute_task_instance(stub, VALID) == "dropped"
    assert executed == []


def test_a_valid_message_is_executed_and_publishes_on_the_tasks_app(
    executed: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    published: list[tuple[Any, Any]] = []
    monkeypatch.setattr(
        celery_app, "publish_many", lambda app, ready, **_: published.append((app, ready))
    )
    stub = SimpleNamespace(app="the app")

    assert celery_app.execute_task_instance(stub, message=dict(VALID)) == "success"

    [(message, settings, publish)] = executed
    assert message == TaskInstanceMessage(**VALID)
    assert settings == "the settings"
    publish(["ready"])
    assert published == [("the app", ["ready"])]


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name in ("TRADEWIND_BROKER_URL", "TRADEWIND_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TRADEWIND_HOME", str(tmp_path))
    reload_settings()
    yield celery_app.create_app()
    monkeypatch.undo()
    reload_settings()


def test_the_registered_task_acks_late_and_drops_a_bad_message(
    app: Any, caplog: pytest.LogCaptureFixture
) -> None:
    task = app.tasks[EXECUTE_TASK_NAME]
    assert task.acks_late is True
    with caplog.at_level(logging.ERROR, logger="tradewind.worker"):
        assert task(message={"ti_id": "nope"}) == "dropped"  # run in this process, no broker
    assert len(caplog.records) == 1


def test_the_threads_pool_hands_the_gil_over_often() -> None:
    from worker.celery_app import SWITCH_INTERVAL_SECONDS, switch_threads_often

    before = sys.getswitchinterval()
    try:
        switch_threads_often()
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_SECONDS)
        assert SWITCH_INTERVAL_SECONDS < 0.005  # Python's default
    finally:
        sys.setswitchinterval(before)
