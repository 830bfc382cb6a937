"""The history retention a running scheduler applies by itself
(``TRADEWIND_HISTORY_RETENTION_DAYS``): runs ended before it go, with their objects; newer and
running ones stay; unset, nothing goes."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import scheduler.loop as loop
from scheduler import Scheduler
from state.core.db import get_engine
from state.core.models import utcnow
from state.engine import Purgers
from tests.scheduler.conftest import create_schema
from tests.state.history_seed import CUTOFF, GONE, KEPT, object_path, runs_left, seed
from tradewind.settings import Settings
from worker.xcom.purge import xcom_purger

ALL_RUNS = {(dag_id, run_id) for dag_id, run_id, *_ in GONE + KEPT}


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    made = create_schema(f"sqlite:///{tmp_path}/tradewind.db")
    seed(made, tmp_path / "objects")
    yield made
    get_engine(made).dispose()


def running_scheduler(settings: Settings, purgers: Purgers, until: threading.Event) -> None:
    """Run a scheduler (no broker, no DAG files) until ``until`` is set."""
    scheduler = Scheduler(settings, app=object(), purgers=purgers)  # type: ignore[arg-type]
    scheduler.sync_if_changed = lambda force=False: None  # type: ignore[method-assign]
    scheduler.run_forever(until)


def retention_days_to(cutoff: dt.datetime) -> float:
    """The retention whose cutoff, now, is ``cutoff`` (the seed's runs have fixed dates)."""
    return (utcnow() - cutoff).total_seconds() / 86400


def test_a_running_scheduler_deletes_what_is_past_the_retention(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loop, "publish_many", lambda app, ready: len(ready))
    objects = tmp_path / "objects"
    settings = Settings(
        database_url=url,
        home=tmp_path / "home",
        history_retention_days=retention_days_to(CUTOFF),
        scheduler_interval_seconds=0.05,
        xcom_backend="object_storage",
        object_storage_url=f"file://{objects}",
    )
    stop = threading.Event()
    thread = threading.Thread(
        target=running_scheduler, args=(settings, Purgers(xcom_purger(settings)), stop)
    )
    thread.start()
    try:
        gone = {(dag_id, run_id) for dag_id, run_id, *_ in GONE} | {("other", "s1")}
        for _ in range(600):  # until the retention has reached them (or a minute has passed)
            if not runs_left(url) & gone:
                break
            stop.wait(0.1)
    finally:
        stop.set()
        thread.join(30)
    assert runs_left(url) == {("old", "new1"), ("old", "live"), ("old", "marked")}
    assert not object_path(objects, "xcom", "old", "s1").exists()
    assert object_path(objects, "xcom", "old", "new1").exists()


def test_without_a_retention_the_scheduler_deletes_nothing(url: str, tmp_path: Path) -> None:
    settings = Settings(database_url=url, home=tmp_path / "home")
    scheduler = Scheduler(settings, app=object())  # type: ignore[arg-type]
    scheduler.sync_if_changed = lambda force=False: None  # type: ignore[method-assign]

    assert not scheduler.retention.enabled
    scheduler.run_once()

    assert runs_left(url) == ALL_RUNS
