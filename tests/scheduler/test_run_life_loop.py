"""The scheduler loop and the DAG sync on a run's life: ``is_paused_upon_creation``, a DAG's
``end_date``, ``dagrun_timeout``, and a run held by its past looked at again each loop."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from sqlalchemy import select, update

from scheduler import loop
from scheduler.loop import Scheduler
from scheduler.timed_runs import NEVER
from state.core.db import session_scope
from state.core.enums import DagRunState, TaskInstanceState
from state.core.models import DagModel, DagRun, utcnow
from tests.state.harness import Home, tradewind_home

TI = TaskInstanceState

DAGS = """
import datetime as dt
from tradewind import DAG, task

@task
def work():
    pass

def hours_ago(hours):
    now = dt.datetime.now(dt.UTC).replace(minute=0, second=0, microsecond=0)
    return now - dt.timedelta(hours=hours)

with DAG("paused_at_first", is_paused_upon_creation=True):
    work()

with DAG("unpaused_at_first", is_paused_upon_creation=False):
    work()

with DAG("ending", schedule="@hourly", start_date=hours_ago(5), catchup=True,
         end_date=hours_ago(3)):
    work()

with DAG("timed", dagrun_timeout=dt.timedelta(minutes=5)):
    work()

with DAG("past"):
    work.override(task_id="free")()
    work.override(depends_on_past=True)()
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    monkeypatch.setattr(loop, "publish_many", lambda app, ready: len(ready))
    with tradewind_home(tmp_path, monkeypatch) as made:
        made.write_dag(DAGS)
        yield made


def scheduler_of(home: Home) -> Scheduler:
    return Scheduler(home.settings, app=SimpleNamespace(main="stub"))  # type: ignore[arg-type]


def hours_ago(hours: float) -> dt.datetime:
    return utcnow().replace(minute=0, second=0, microsecond=0) - dt.timedelta(hours=hours)


def test_a_dag_first_seen_is_stored_paused_when_it_asks_and_only_then(home: Home) -> None:
    home.sync()
    assert home.dag_model("paused_at_first").is_paused
    assert not home.dag_model("unpaused_at_first").is_paused
    with session_scope(home.url) as session:
        session.execute(update(DagModel).values(is_paused=False))
    home.write_dag(DAGS + "\n# changed\n")
    home.sync()
    assert not home.dag_model("paused_at_first").is_paused  # upon creation only


def test_no_scheduled_run_has_a_logical_date_after_the_dags_end_date(home: Home) -> None:
    scheduler_of(home).run_once()
    with session_scope(home.url) as session:
        dates = list(
            session.scalars(
                select(DagRun.logical_date).where(DagRun.dag_id == "ending").order_by(DagRun.id)
            )
        )
        assert session.get_one(DagModel, "ending").next_dagrun_after == NEVER
    assert dates == [hours_ago(4), hours_ago(3)]


def test_the_loop_fails_a_run_past_its_dagrun_timeout(home: Home) -> None:
    scheduler = scheduler_of(home)
    scheduler.run_once()
    run_pk = home.trigger("timed")
    scheduler.run_once()
    assert home.run_state(run_pk) == DagRunState.RUNNING
    with session_scope(home.url) as session:
        started = utcnow() - dt.timedelta(minutes=6)
        session.execute(update(DagRun).where(DagRun.id == run_pk).values(start_date=started))
    scheduler.run_once()
    assert home.run_state(run_pk) == DagRunState.FAILED
    assert home.states(run_pk) == {"work": TI.SKIPPED}


def test_a_run_held_by_its_past_is_passed_again_when_the_previous_run_moves(home: Home) -> None:
    scheduler = scheduler_of(home)
    scheduler.run_once()
    first = home.trigger("past", run_id="first")
    second = home.trigger("past", run_id="second")
    scheduler.run_once()
    assert home.states(first) == {"free": TI.QUEUED, "work": TI.QUEUED}
    assert home.states(second) == {"free": TI.QUEUED, "work": TI.NONE}
    assert home.run_state(second) == DagRunState.RUNNING
    scheduler.run_once()  # nothing changed in the second run: still looked at
    home.end_try(home.ti(first, "work").id, TI.SUCCESS)
    scheduler.run_once()
    assert home.states(second)["work"] == TI.QUEUED
