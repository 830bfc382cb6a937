"""Partitioned DAGs get one run per downstream partition key: hourly keys rolling up into a day,
a week fanning out into days, segment rollups, a key a mapper refuses, and max_active_runs.

Real forked task processes and a real supervisor on SQLite, the scheduler's asset pass called
directly (tests/integration/test_partitions_fleet.py runs the same through schedulers on
PostgreSQL).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from api.models.dag_runs import dag_run_response
from broker_config import message_of
from cli.runs import run_record
from scheduler import loop
from scheduler.asset_runs import create_asset_triggered_runs
from scheduler.partition_runs import partition_run_id
from state.core.db import session_scope
from state.core.models import DagRun, PartitionDagRun, PartitionEventQueue, PartitionKeyLog, utcnow
from state.engine.scheduling import Enqueue
from tests.state.harness import Home, tradewind_home
from worker.supervisor.execute import execute

DAGS = """
from tradewind import (
    DAG, AllowedKeyMapper, Asset, DayWindow, FanOutMapper, FixedKeyMapper, MinimumCount,
    PartitionedAssetTimetable, PartitionedAtRuntime, RollupMapper, SegmentWindow,
    StartOfDayMapper, StartOfHourMapper, StartOfWeekMapper, WeekWindow, task,
)

hourly = Asset("s3://stats/hourly")
weekly = Asset("s3://models/weekly")
regions = Asset("s3://sales/regions")
plain = Asset("s3://plain")

def producer(dag_id, asset):
    with DAG(dag_id, schedule=PartitionedAtRuntime()):
        @task(outlets=[asset], task_id="emit")
        def emit(dag_run=None, outlet_events=None):
            outlet_events[asset].add_partitions(dag_run.conf["keys"])
        emit()

producer("emit_hourly", hourly)
producer("emit_weekly", weekly)
producer("emit_regions", regions)

with DAG("emit_plain"):
    task(lambda: None, task_id="noop", outlets=[plain])()

def consumer(dag_id, assets, mapper, **options):
    timetable = PartitionedAssetTimetable(assets=assets, default_partition_mapper=mapper)
    with DAG(dag_id, schedule=timetable, **options):
        @task
        def report(dag_run=None, partition_key=None):
            return [dag_run.partition_key, partition_key, str(dag_run.partition_date)]
        report()

consumer("per_hour", hourly, StartOfHourMapper())
consumer("daily", hourly, RollupMapper(upstream_mapper=StartOfDayMapper(), window=DayWindow()))
consumer("one_at_a_time", hourly, StartOfHourMapper(), max_active_runs=1)
consumer(
    "daily_inference",
    weekly,
    FanOutMapper(upstream_mapper=StartOfWeekMapper(), window=WeekWindow()),
)
consumer("allowed_regions", regions, AllowedKeyMapper(["us", "eu", "apac"]))
consumer("every_region", regions, FixedKeyMapper("all"))
consumer(
    "two_regions",
    regions,
    RollupMapper(
        upstream_mapper=FixedKeyMapper("all"),
        window=SegmentWindow(["us", "eu", "apac"]),
        wait_policy=MinimumCount(2),
    ),
)
consumer("on_plain", plain, StartOfDayMapper())
"""

DAY = [f"2026-06-14T{hour:02}:00:00" for hour in range(24)]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    monkeypatch.setattr(loop, "publish_many", lambda app, ready: len(ready))
    with tradewind_home(tmp_path, monkeypatch, heartbeat_seconds="0.2") as made:
        made.write_dag(DAGS)
        assert made.sync().import_errors == {}
        yield made


def run_all(home: Home, run_pk: int) -> None:
    pending: list[Enqueue] = home.schedule(run_pk)
    while pending:
        execute(message_of(pending.pop(0)), home.settings, pending.extend)
        pending = pending or home.schedule(run_pk)
    assert home.run_state(run_pk) == "success"


def emit(home: Home, dag_id: str, keys: list[str]) -> None:
    run_all(home, home.trigger(dag_id, conf={"keys": keys}))


def keys_of(home: Home, dag_id: str) -> list[str | None]:
    with session_scope(home.url) as session:
        query = select(DagRun.partition_key).where(DagRun.dag_id == dag_id).order_by(DagRun.id)
        return list(session.scalars(query))


def run_of(home: Home, dag_id: str, key: str) -> DagRun:
    with session_scope(home.url) as session:
        query = select(DagRun).where(DagRun.dag_id == dag_id, DagRun.partition_key == key)
        run: DagRun = session.scalars(query).one()
        return run


def test_hourly_partitions_roll_up_into_one_daily_run_once_the_day_is_whole(home: Home) -> None:
    emit(home, "emit_hourly", DAY[:12])
    create_asset_triggered_runs(home.url)
    assert keys_of(home, "daily") == []  # half a day
    assert keys_of(home, "per_hour") == [key[:13] for key in DAY[:12]]
    emit(home, "emit_hourly", DAY[12:])
    create_asset_triggered_runs(home.url)
    assert keys_of(home, "daily") == ["2026-06-14"]
    daily = run_of(home, "daily", "2026-06-14")
    assert (daily.run_id, daily.run_type) == ("asset_triggered__2026-06-14", "asset_triggered")
    assert run_record(daily)["partition_key"] == "2026-06-14"  # tradewind runs show
    response = dag_run_response(daily)  # the API's DAGRunResponse
    assert (response.partition_key, response.triggered_by) == ("2026-06-14", "asset")
    run_all(home, daily.id)
    report = json.loads(home.xcoms(daily.id)[("report", "return_value")])
    assert report == ["2026-06-14", "2026-06-14", "2026-06-14 00:00:00+00:00"]
    emit(home, "emit_hourly", DAY[:1])  # the day again: recorded, no second run
    create_asset_triggered_runs(home.url)
    assert keys_of(home, "daily") == ["2026-06-14"]
    assert len(keys_of(home, "per_hour")) == 16  # max_active_runs: the other hours wait


def test_a_weekly_key_fans_out_to_a_run_per_day(home: Home) -> None:
    emit(home, "emit_weekly", ["2026-06-10T00:00:00"])  # a Wednesday: its week's Monday is the 8th
    created = create_asset_triggered_runs(home.url)
    days = [f"2026-06-{day:02}" for day in range(8, 15)]
    assert keys_of(home, "daily_inference") == days
    assert sorted(created) == sorted(f"asset_triggered__{day}" for day in days)


def test_segment_rollups_wait_for_their_count_and_a_refused_key_is_one_line(
    home: Home, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tradewind.scheduler")
    emit(home, "emit_regions", ["us", "mars"])
    create_asset_triggered_runs(home.url)
    refused = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert refused == [
        "DAG allowed_regions: partition key 'mars' of asset 's3://sales/regions' (event 2) "
        "refused, the event is ignored: AllowedKeyMapper: partition key 'mars' is not one of "
        "['us', 'eu', 'apac']"
    ]
    assert keys_of(home, "allowed_regions") == ["us"]  # its other key ran
    assert keys_of(home, "every_region") == ["all"]  # the other consumers did not notice
    assert keys_of(home, "two_regions") == []  # "mars" is not in its window
    emit(home, "emit_regions", ["eu"])
    create_asset_triggered_runs(home.url)
    assert keys_of(home, "two_regions") == ["all"]
    with session_scope(home.url) as session:
        assert session.scalars(select(PartitionEventQueue)).all() == []


def test_a_complete_partition_waits_for_a_run_slot(home: Home) -> None:
    emit(home, "emit_hourly", DAY[:2])
    create_asset_triggered_runs(home.url)
    assert keys_of(home, "one_at_a_time") == ["2026-06-14T00"]
    with session_scope(home.url) as session:
        waiting = session.scalars(
            select(PartitionDagRun).where(PartitionDagRun.target_dag_id == "one_at_a_time")
        ).all()
        assert [
            (row.partition_key, row.run_id is None, row.ready_at is not None) for row in waiting
        ] == [
            ("2026-06-14T00", False, False),
            ("2026-06-14T01", True, True),
        ]
    create_asset_triggered_runs(home.url)  # no new event, and the first run still active
    assert keys_of(home, "one_at_a_time") == ["2026-06-14T00"]
    run_all(home, run_of(home, "one_at_a_time", "2026-06-14T00").id)
    create_asset_triggered_runs(home.url)  # no new event: the ready row is looked at again
    assert keys_of(home, "one_at_a_time") == ["2026-06-14T00", "2026-06-14T01"]


def test_an_update_without_a_key_is_named_and_creates_no_run(
    home: Home, caplog: pytest.LogCaptureFixture
) -> None:
    run_all(home, home.trigger("emit_plain"))
    assert create_asset_triggered_runs(home.url) == []
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "DAG on_plain is partitioned: an update of 's3://plain' had no partition key"
    ]
    assert create_asset_triggered_runs(home.url) == []  # its queue was consumed


def test_a_partition_run_id_is_the_key_made_safe_for_a_path() -> None:
    assert partition_run_id("us|2026-06-14", 3) == "asset_triggered__us%7C2026-06-14"
    assert partition_run_id("a/b", 3) != partition_run_id("a_b", 4)
    assert partition_run_id("x" * 300, 7) == "asset_triggered__partition_7"


def test_rows_left_by_an_older_mapper_are_told_and_never_break_the_pass(
    home: Home, caplog: pytest.LogCaptureFixture
) -> None:
    """A DAG whose mapper changed keeps the rows mapped by the old one: a rollup cannot read
    its window from such a key (one line, no run), another mapper runs it without a date."""
    emit(home, "emit_hourly", DAY[:1])
    create_asset_triggered_runs(home.url)
    with session_scope(home.url) as session:
        (event_id,) = session.scalars(select(PartitionKeyLog.asset_event_id).distinct()).all()
        asset_id = session.scalars(select(PartitionKeyLog.asset_id)).first()
        for dag_id, key in (("daily", "2026-06-14T03"), ("per_hour", "legacy")):
            row = PartitionDagRun(target_dag_id=dag_id, partition_key=key, ready_at=utcnow())
            session.add(row)
            session.flush()
            session.add(
                PartitionKeyLog(
                    partition_run_id=row.id,
                    asset_event_id=event_id,
                    asset_id=asset_id,
                    source_partition_key=DAY[0],
                )
            )
    caplog.clear()
    create_asset_triggered_runs(home.url)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "DAG daily: partition '2026-06-14T03' not checked: StartOfDayMapper: downstream key "
        "'2026-06-14T03' is not '%Y-%m-%d'"
    ]
    assert "2026-06-14T03" not in keys_of(home, "daily")
    assert run_of(home, "per_hour", "legacy").partition_date is None
