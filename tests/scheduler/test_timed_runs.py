"""The scheduler creates the runs of scheduled DAGs when due, once, and not while paused."""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from sqlalchemy import select

from scheduler import loop
from scheduler.loop import Scheduler
from scheduler.timed_runs import create_due_runs, due_dags
from state.core.db import session_scope
from state.core.models import DagModel, DagRun, utcnow
from state.records.dags import NoSuchDag, set_paused
from tests.state.harness import Home, tradewind_home

PG_DATABASE_PREFIX = "tw_timed_"
HOUR = dt.timedelta(hours=1)

SCHEDULED = """
import contextlib
import datetime as dt
from tradewind import dag, task

@task
def tick(data_interval_start=None, data_interval_end=None):
    return [str(data_interval_start), str(data_interval_end)]

@dag(dag_id="ticker", schedule={schedule!r}, start_date={start}, catchup={catchup},
     max_active_runs={max_runs})
def ticker():
    tick()

ticker()

@dag(dag_id="manual")
def manual():
    tick()

manual()
"""


@pytest.fixture
def make_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Home]]:
    """``make_home(schedule=..., start=..., catchup=..., max_runs=...)``: the ticker DAG."""
    monkeypatch.setattr(loop, "publish_many", lambda app, ready: len(ready))
    with contextlib.ExitStack() as stack:

        def make(
            schedule: str = "@hourly",
            start: dt.datetime | None = None,
            catchup: bool = False,
            max_runs: int = 16,
            url: str | None = None,
        ) -> Home:
            env = {"database_url": url} if url else {}
            home = stack.enter_context(tradewind_home(tmp_path, monkeypatch, **env))
            begin = f"dt.datetime.fromisoformat({start.isoformat()!r})" if start else "None"
            home.write_dag(
                SCHEDULED.format(schedule=schedule, start=begin, catchup=catchup, max_runs=max_runs)
            )
            return home

        yield make


def scheduled_runs(home: Home) -> list[tuple[dt.datetime | None, dt.datetime | None, str]]:
    with session_scope(home.url) as session:
        runs = session.scalars(
            select(DagRun).where(DagRun.run_type == "scheduled").order_by(DagRun.id)
        )
        return [(r.data_interval_start, r.data_interval_end, r.run_id) for r in runs]


def hours_ago(hours: float) -> dt.datetime:
    now = utcnow().replace(minute=0, second=0, microsecond=0)
    return now - dt.timedelta(hours=hours)


def scheduler_of(home: Home) -> Scheduler:
    return Scheduler(home.settings, app=SimpleNamespace(main="stub"))  # type: ignore[arg-type]


def test_catchup_creates_every_interval_since_start_date_once(
    make_home: Callable[..., Home],
) -> None:
    home = make_home(start=hours_ago(3), catchup=True)
    scheduler = scheduler_of(home)
    assert scheduler.run_once().created == 3
    runs = scheduled_runs(home)
    assert [(start, end) for start, end, _ in runs] == [
        (hours_ago(3), hours_ago(2)),
        (hours_ago(2), hours_ago(1)),
        (hours_ago(1), hours_ago(0)),
    ]
    assert runs[0][2] == f"scheduled__{hours_ago(2).isoformat()}"
    assert scheduler.run_once().created == 0
    with session_scope(home.url) as session:
        model = session.get_one(DagModel, "ticker")
        assert model.next_dagrun_after == hours_ago(-1)  # the next hour, not yet due
        run = session.scalars(select(DagRun).filter_by(run_id=runs[0][2])).one()
        assert run.logical_date == hours_ago(2)
        assert session.get_one(DagModel, "manual").next_dagrun_after is None


def test_without_catchup_only_the_latest_interval_runs(make_home: Callable[..., Home]) -> None:
    home = make_home(start=hours_ago(5), catchup=False)
    assert scheduler_of(home).run_once().created == 1
    assert [(s, e) for s, e, _ in scheduled_runs(home)] == [(hours_ago(1), hours_ago(0))]


def test_max_active_runs_bounds_how_many_runs_catchup_creates(
    make_home: Callable[..., Home],
) -> None:
    home = make_home(start=hours_ago(6), catchup=True, max_runs=2)
    scheduler = scheduler_of(home)
    assert scheduler.run_once().created == 2
    assert scheduler.run_once().created == 0  # two runs are active: nothing more yet
    with session_scope(home.url) as session:
        states = list(session.scalars(select(DagRun.state).order_by(DagRun.id)))
    assert states == ["running", "running"]


def test_a_paused_dag_gets_no_runs_and_skips_missed_intervals_on_unpause(
    make_home: Callable[..., Home],
) -> None:
    home = make_home(start=hours_ago(2), catchup=False)
    home.sync()
    with session_scope(home.url) as session:
        assert set_paused(session, "ticker", True) is False
    scheduler = scheduler_of(home)
    assert scheduler.run_once().created == 0
    home.trigger("ticker", run_id="by-hand")
    scheduler.run_once()
    assert home.run_state(_pk(home, "by-hand")) == "queued"  # nor is anything scheduled

    with session_scope(home.url) as session:
        assert set_paused(session, "ticker", False) is True
        with pytest.raises(NoSuchDag):
            set_paused(session, "nope", True)
    assert scheduler.run_once().created == 1
    assert [(s, e) for s, e, _ in scheduled_runs(home)] == [(hours_ago(1), hours_ago(0))]
    assert home.run_state(_pk(home, "by-hand")) == "running"


def _pk(home: Home, run_id: str) -> int:
    with session_scope(home.url) as session:
        return session.scalars(select(DagRun.id).filter_by(run_id=run_id)).one()


def test_a_changed_schedule_is_picked_up(make_home: Callable[..., Home]) -> None:
    home = make_home(start=hours_ago(3), catchup=True)
    scheduler = scheduler_of(home)
    scheduler.run_once()
    source = (home.dags / "dags.py").read_text().replace("'@hourly'", "'0 */2 * * *'")
    (home.dags / "dags.py").write_text(source)
    scheduler.sync_if_changed(force=True)
    with session_scope(home.url) as session:
        assert session.get_one(DagModel, "ticker").next_dagrun_after is None
    scheduler.run_once()
    with session_scope(home.url) as session:
        model = session.get_one(DagModel, "ticker")
        assert model.next_dagrun_after is not None
        assert model.next_dagrun_after.hour % 2 == 0


@pytest.mark.integration
def test_two_schedulers_create_each_due_run_once(
    make_home: Callable[..., Home], pg_url: str
) -> None:
    home = make_home(start=hours_ago(4), catchup=True, url=pg_url)
    home.sync()
    now = utcnow()
    with session_scope(home.url) as session:
        [due] = due_dags(session, now)
    start = threading.Barrier(2)
    created: list[list[str]] = []

    def scheduler() -> None:
        start.wait()
        with session_scope(home.url) as session:
            created.append(create_due_runs(session, due, now))

    threads = [threading.Thread(target=scheduler) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(scheduled_runs(home)) == 4
    assert sorted(len(c) for c in created)[-1] >= 1
    assert sum(len(c) for c in created) == 4  # each run created by exactly one of them
