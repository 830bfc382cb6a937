"""The scheduler creates the runs a timetable object asks for: Airflow's timetables, asset or
time, ``@continuous``, and a timetable class of the DAG folder, rebuilt from the stored DAG."""

from __future__ import annotations

import datetime as dt
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from sqlalchemy import delete, select, update

from scheduler import loop
from scheduler.loop import Scheduler
from scheduler.timed_runs import create_due_runs, due_dags
from state.core.db import session_scope
from state.core.models import DagModel, DagRun, TaskInstance, utcnow
from state.engine.backfills import BackfillRequest, create_backfill
from state.records.assets import BY_HAND, OutletEvent, record_events
from state.records.dags import set_paused
from tests.state.harness import Home, tradewind_home
from tradewind import timetable_base
from tradewind.timetable_store import rebuild_timetable

HOUR = dt.timedelta(hours=1)
PG_DATABASE_PREFIX = "tw_timetable_"

DAGS = """
import datetime as dt
from tradewind import (
    DAG, Asset, AssetOrTimeSchedule, CronDataIntervalTimetable, CronTriggerTimetable,
    EventsTimetable, task,
)

start = dt.datetime.fromisoformat({start!r})
now = dt.datetime.fromisoformat({now!r})

def tick():
    return "tick"

with DAG("trigger", schedule=CronTriggerTimetable("0 * * * *", timezone="UTC"),
         start_date=start, catchup=True):
    task(tick)()

with DAG("intervals", schedule=CronDataIntervalTimetable("@hourly", "UTC"),
         start_date=start, catchup=True):
    task(tick)()

events = [now - dt.timedelta(hours=2), now + dt.timedelta(minutes=30)]
with DAG("events", schedule=EventsTimetable(events)):
    task(tick)()

with DAG("continuous", schedule="@continuous", max_active_runs=1, start_date=start):
    task(tick)()

with DAG("asset_or_time", start_date=start, catchup=False, schedule=AssetOrTimeSchedule(
        timetable=CronTriggerTimetable("0 * * * *", timezone="UTC"), assets=[Asset("s3://x")])):
    task(tick)()
"""

CUSTOM = '''
import datetime as dt
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "plugins"))

from evens import EvenHours
from tradewind import DAG, task
from tradewind.timetable_base import DagRunInfo, DataInterval, Timetable

class Daily(Timetable):
    """A run a day at ``hour``, over the day before: its state is its hour."""

    def __init__(self, hour=0):
        self.hour = hour

    @classmethod
    def deserialize(cls, data):
        return cls(data["hour"])

    def serialize(self):
        return {"hour": self.hour}

    def infer_manual_data_interval(self, *, run_after):
        return DataInterval(run_after - dt.timedelta(days=1), run_after)

    def next_dagrun_info(self, *, last_automated_data_interval, restriction):
        if last_automated_data_interval is None:
            day = restriction.earliest.replace(hour=self.hour, minute=0, second=0, microsecond=0)
        else:
            day = last_automated_data_interval.end + dt.timedelta(days=1)
        return DagRunInfo.interval(day - dt.timedelta(days=1), day)

with DAG("daily_custom", schedule=Daily(hour=6), start_date={start}, catchup=True):
    task(lambda: 1, task_id="one")()

with DAG("even_hours", schedule=EvenHours(), start_date={start}, catchup=True):
    task(lambda: 1, task_id="one")()
'''

PLUGIN = '''
import pendulum
from tradewind.timetable_base import DagRunInfo, DataInterval, Timetable

class EvenHours(Timetable):
    """Written as Airflow's plugin timetables are: pendulum's DateTime API on what it is given."""

    def infer_manual_data_interval(self, *, run_after):
        return DataInterval.exact(run_after)

    def next_dagrun_info(self, *, last_automated_data_interval, restriction):
        if last_automated_data_interval is None:
            start = restriction.earliest.start_of("hour")
        else:
            start = last_automated_data_interval.end.add(hours=1)
        if start.hour % 2:
            start = start.add(hours=1)
        if restriction.latest is not None and start > restriction.latest:
            return None
        return DagRunInfo.exact(start)
'''


def hours_ago(hours: float) -> dt.datetime:
    return utcnow().replace(minute=0, second=0, microsecond=0) - dt.timedelta(hours=hours)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    monkeypatch.setattr(loop, "publish_many", lambda app, ready: len(ready))
    with tradewind_home(tmp_path, monkeypatch) as made:
        yield made


@pytest.fixture
def pg_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pg_url: str) -> Iterator[Home]:
    monkeypatch.setattr(loop, "publish_many", lambda app, ready: len(ready))
    with tradewind_home(tmp_path, monkeypatch, database_url=pg_url) as made:
        yield made


def scheduler_of(home: Home) -> Scheduler:
    return Scheduler(home.settings, app=SimpleNamespace(main="stub"))  # type: ignore[arg-type]


def runs_of(home: Home, dag_id: str) -> list[DagRun]:
    with session_scope(home.url) as session:
        query = select(DagRun).where(DagRun.dag_id == dag_id).order_by(DagRun.id)
        runs = list(session.scalars(query))
        session.expunge_all()
        return runs


def finish_runs(home: Home, dag_id: str) -> None:
    with session_scope(home.url) as session:
        session.execute(update(DagRun).where(DagRun.dag_id == dag_id).values(state="success"))


def write_dags(home: Home, start: dt.datetime) -> None:
    now = utcnow()
    home.write_dag(DAGS.format(start=start.isoformat(), now=now.isoformat()))


def test_trigger_and_data_interval_timetables_create_their_runs(home: Home) -> None:
    write_dags(home, hours_ago(3))
    scheduler_of(home).run_once()
    trigger = runs_of(home, "trigger")
    # A run at each point since start_date, about that instant; its logical date is the point.
    points = [hours_ago(h) for h in (3, 2, 1, 0)]
    assert [(r.data_interval_start, r.data_interval_end, r.logical_date) for r in trigger] == [
        (p, p, p) for p in points
    ]
    assert trigger[0].run_id == f"scheduled__{points[0].isoformat()}"
    intervals = runs_of(home, "intervals")
    # A run per hour that has ended; its logical date is the hour's start.
    assert [(r.data_interval_start, r.data_interval_end, r.logical_date) for r in intervals] == [
        (hours_ago(h), hours_ago(h - 1), hours_ago(h)) for h in (3, 2, 1)
    ]
    assert intervals[-1].run_id == f"scheduled__{hours_ago(0).isoformat()}"
    with session_scope(home.url) as session:
        model = session.get_one(DagModel, "trigger")
        assert model.next_dagrun_after == hours_ago(-1)
        assert model.next_dagrun_data_interval_start == hours_ago(-1)
    scheduler_of(home).run_once()
    assert len(runs_of(home, "trigger")) == 4


def test_a_run_is_created_as_the_timetable_asked_for_it(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_dags(home, hours_ago(3))
    home.sync()
    now = utcnow()
    with session_scope(home.url) as session:
        [events] = [due for due in due_dags(session, now) if due.dag_id == "events"]
        assert create_due_runs(session, events, now) == []  # the event two hours ago: skipped
    # Once the next event is due, asked again the timetable would skip it too (catchup=False):
    # the run is the one it asked for when it was ahead.
    later = now + dt.timedelta(minutes=31)
    monkeypatch.setattr(timetable_base, "utcnow", lambda: later)
    with session_scope(home.url) as session:
        [events] = [due for due in due_dags(session, later) if due.dag_id == "events"]
        [run_id] = create_due_runs(session, events, later)
    [run] = runs_of(home, "events")
    assert run.run_id == run_id and run.logical_date == run.data_interval_end
    assert later - run.logical_date < dt.timedelta(minutes=2)


def test_continuous_starts_a_run_when_the_previous_one_ends(home: Home) -> None:
    write_dags(home, hours_ago(3))
    scheduler = scheduler_of(home)
    scheduler.run_once()  # asked now, the first run is due a moment after the loop's clock
    scheduler.run_once()
    [first] = runs_of(home, "continuous")
    assert first.data_interval_start == hours_ago(3)
    scheduler.run_once()
    assert len(runs_of(home, "continuous")) == 1  # one run at a time
    finish_runs(home, "continuous")
    scheduler.run_once()
    first, second = runs_of(home, "continuous")
    assert second.data_interval_start == first.data_interval_end


def test_asset_or_time_runs_on_the_clock_and_on_asset_updates(home: Home) -> None:
    write_dags(home, hours_ago(3))
    scheduler = scheduler_of(home)
    scheduler.run_once()
    [timed] = runs_of(home, "asset_or_time")
    assert (timed.run_type, timed.logical_date) == ("scheduled", hours_ago(0))
    with session_scope(home.url) as session:
        record_events(session, BY_HAND, [OutletEvent("s3://x")], utcnow())
    scheduler.run_once()
    assert [run.run_type for run in runs_of(home, "asset_or_time")] == [
        "scheduled",
        "asset_triggered",
    ]


def test_a_timetable_class_of_the_dag_folder_is_rebuilt_and_run(home: Home) -> None:
    start = hours_ago(50).replace(hour=0)
    (home.dags / "plugins").mkdir()
    (home.dags / "plugins" / "evens.py").write_text(PLUGIN)
    begin = f"dt.datetime.fromisoformat({start.isoformat()!r})"
    home.write_dag(CUSTOM.replace("{start}", begin), name="custom.py")
    scheduler = scheduler_of(home)
    scheduler.run_once()
    daily = runs_of(home, "daily_custom")
    assert daily[0].data_interval_end == start.replace(hour=6)
    assert all(r.data_interval_end - r.data_interval_start == dt.timedelta(days=1) for r in daily)
    evens = runs_of(home, "even_hours")
    assert evens[0].logical_date == start and {r.logical_date.hour % 2 for r in evens} == {0}
    assert len(evens) == len({r.logical_date for r in evens}) == 16  # max_active_runs
    # Rebuilt in a process that never imported them: from their files, by their module names.
    with session_scope(home.url) as session:
        stored = [
            session.get_one(DagModel, d).structure["timetable"]
            for d in ("daily_custom", "even_hours")
        ]
    for timetable in stored:
        module = timetable["class"].partition(":")[0]
        saved = sys.modules.pop(module)
        try:
            assert type(rebuild_timetable(timetable)).__name__ in ("Daily", "EvenHours")
            assert sys.modules[module] is not saved
        finally:
            sys.modules[module] = saved
    assert stored[0]["data"] == {"hour": 6} and stored[1]["file"].endswith("plugins/evens.py")


def test_a_backfill_creates_the_runs_the_timetable_asks_for(home: Home) -> None:
    write_dags(home, hours_ago(30))
    home.sync()
    start, end = hours_ago(10), hours_ago(8)
    with session_scope(home.url) as session:
        made = create_backfill(session, BackfillRequest("trigger", start, end))
        create_backfill(session, BackfillRequest("intervals", start, end))
    assert made.created == [f"backfill__{hours_ago(h).isoformat()}" for h in (10, 9, 8)]
    trigger = [(r.logical_date, r.data_interval_end) for r in runs_of(home, "trigger")]
    assert trigger == [(hours_ago(h), hours_ago(h)) for h in (10, 9, 8)]
    intervals = [(r.logical_date, r.data_interval_end) for r in runs_of(home, "intervals")]
    assert intervals == [(hours_ago(h), hours_ago(h - 1)) for h in (10, 9, 8)]


def test_an_unpaused_dag_without_catchup_skips_the_points_it_was_paused_for(home: Home) -> None:
    write_dags(home, hours_ago(3))
    scheduler = scheduler_of(home)
    scheduler.run_once()
    with session_scope(home.url) as session:
        set_paused(session, "asset_or_time", True)
        # The point it was waiting for, and two more, passed while it was paused.
        session.execute(
            update(DagModel)
            .where(DagModel.dag_id == "asset_or_time")
            .values(
                next_dagrun_after=hours_ago(2),
                next_dagrun_data_interval_start=hours_ago(2),
                next_dagrun_data_interval_end=hours_ago(2),
            )
        )
        for table in (TaskInstance, DagRun):
            session.execute(delete(table).where(table.dag_id == "asset_or_time"))
    scheduler.run_once()
    assert runs_of(home, "asset_or_time") == []
    with session_scope(home.url) as session:
        set_paused(session, "asset_or_time", False)
    scheduler.run_once()
    assert [r.logical_date for r in runs_of(home, "asset_or_time")] == [hours_ago(0)]


@pytest.mark.integration
def test_two_schedulers_on_postgresql_create_each_timetable_run_once(pg_home: Home) -> None:
    write_dags(pg_home, hours_ago(3))
    pg_home.sync()
    now = utcnow()
    with session_scope(pg_home.url) as session:
        [due] = [d for d in due_dags(session, now) if d.dag_id == "trigger"]
    start = threading.Barrier(2)
    created: list[list[str]] = []

    def scheduler() -> None:
        start.wait()
        with session_scope(pg_home.url) as session:
            created.append(create_due_runs(session, due, now))

    threads = [threading.Thread(target=scheduler) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.logical_date for r in runs_of(pg_home, "trigger")] == [
        hours_ago(h) for h in (3, 2, 1, 0)
    ]
    assert sum(len(c) for c in created) == 4  # each run created by exactly one of them
    with session_scope(pg_home.url) as session:
        assert session.get_one(DagModel, "trigger").next_dagrun_after == hours_ago(-1)
