"""A producer's success records its asset events with its end; the scheduler then creates the
runs of the DAGs whose asset condition holds, once, and consumes what they waited on.

Real forked task processes and a real supervisor (``worker.supervisor.execute.execute``) on SQLite;
the scheduler's loop with its broker stubbed (the fleet test, tests/integration, sends for real).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from sqlalchemy import select

from broker_config import message_of
from scheduler import loop
from scheduler.asset_runs import create_asset_triggered_runs
from scheduler.loop import Scheduler
from scheduler.timed_runs import create_due_runs, due_dags
from state.core.db import session_scope
from state.core.models import AssetDagRunQueue, DagRun
from state.engine.backfills import BackfillRequest, create_backfill
from state.engine.runs import create_run
from state.engine.scheduling import Enqueue
from state.records.assets import consume, list_assets, list_events, queued_assets
from tests.state.harness import Home, tradewind_home
from worker.supervisor.execute import execute

DAGS = """
from tradewind import DAG, Asset, AssetAlias, CronPartitionTimetable, Metadata, asset, dag, task

raw = Asset("s3://bucket/raw", extra={"kind": "raw"})
clean = Asset(name="clean", uri="file:///data/clean")
alias = AssetAlias("daily-alias")

with DAG("produce_raw"):
    @task(outlets=[raw])
    def write_raw(outlet_events=None):
        outlet_events[raw].extra["rows"] = 3
    write_raw()

with DAG("produce_clean"):
    @task(outlets=[clean])
    def write_clean():
        yield Metadata(clean, {"rows": 7})
    write_clean()

with DAG("produce_through_alias"):
    @task(outlets=[alias])
    def resolve(outlet_events=None):
        outlet_events[alias].add(Asset("s3://bucket/resolved"), extra={"via": "alias"})
    resolve()

with DAG("hourly_partitions", schedule=CronPartitionTimetable("0 * * * *", timezone="UTC")):
    @task(outlets=[clean])
    def partition(dag_run=None, partition_key=None):
        return [dag_run.partition_key, partition_key]
    partition()

with DAG("unknown_alias"):
    @task(outlets=[raw])
    def stray(outlet_events=None):
        outlet_events[AssetAlias("nowhere")].add(raw)
    stray()

with DAG("needs_raw", schedule=[raw]):
    @task(inlets=[raw])
    def read(inlet_events=None):
        return [event.extra for event in inlet_events[raw]]
    read()

with DAG("needs_both", schedule=raw & clean):
    task(lambda: None, task_id="noop")()

with DAG("needs_either", schedule=raw | clean):
    task(lambda: None, task_id="noop")()

with DAG("needs_alias", schedule=[alias]):
    task(lambda: None, task_id="noop")()

with DAG("stateful"):
    @task(outlets=[raw])
    def advance(asset_state_store=None):
        state = asset_state_store[raw]
        state.set("runs", state.get("runs", default=0) + 1)
        state.set("summary", {"last": "ok"})
        state.delete("summary")
        return state.get("runs"), state.get("summary", default="gone")
    advance()

@asset(schedule=[raw])
def summary(self, context):
    return self.uri
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    monkeypatch.setattr(loop, "publish_many", lambda app, ready: len(ready))
    with tradewind_home(tmp_path, monkeypatch, heartbeat_seconds="0.2") as made:
        made.write_dag(DAGS)
        assert made.sync().import_errors == {}
        yield made


def run_all(home: Home, run_pk: int) -> list[str]:
    pending: list[Enqueue] = home.schedule(run_pk)
    outcomes = []
    while pending:
        outcomes.append(execute(message_of(pending.pop(0)), home.settings, pending.extend))
        pending = pending or home.schedule(run_pk)
    return outcomes


def produce(home: Home, dag_id: str) -> None:
    run_pk = home.trigger(dag_id)
    run_all(home, run_pk)
    assert home.run_state(run_pk) == "success"


def runs_of(home: Home, dag_id: str) -> list[DagRun]:
    with session_scope(home.url) as session:
        query = select(DagRun).where(DagRun.dag_id == dag_id).order_by(DagRun.id)
        return list(session.scalars(query))


def test_a_producers_success_creates_the_consumers_run_once(home: Home) -> None:
    produce(home, "produce_raw")
    created = create_asset_triggered_runs(home.url)
    assert sorted(run_id.split("__")[0] for run_id in created) == ["asset_triggered"] * 3
    assert [r.run_type for r in runs_of(home, "needs_raw")] == ["asset_triggered"]
    assert len(runs_of(home, "needs_either")) == 1
    assert len(runs_of(home, "summary")) == 1
    assert runs_of(home, "needs_both") == []  # clean was not updated yet
    assert create_asset_triggered_runs(home.url) == []  # consumed: nothing new
    with session_scope(home.url) as session:
        left = session.scalars(select(AssetDagRunQueue.target_dag_id)).all()
    assert left == ["needs_both"]


def test_an_and_condition_waits_for_every_asset(home: Home) -> None:
    produce(home, "produce_raw")
    create_asset_triggered_runs(home.url)
    produce(home, "produce_clean")
    create_asset_triggered_runs(home.url)
    assert len(runs_of(home, "needs_both")) == 1
    assert len(runs_of(home, "needs_either")) == 2


def test_events_carry_the_extras_the_task_set_and_a_consumer_reads_them(home: Home) -> None:
    produce(home, "produce_raw")
    produce(home, "produce_clean")
    with session_scope(home.url) as session:
        (raw,) = list_events(session, "s3://bucket/raw")
        (clean,) = list_events(session, "file:///data/clean")
    assert raw.extra == {"kind": "raw", "rows": 3}
    assert (raw.source_dag_id, raw.source_task_id) == ("produce_raw", "write_raw")
    assert clean.extra == {"rows": 7}
    create_asset_triggered_runs(home.url)
    (consumer,) = runs_of(home, "needs_raw")
    run_all(home, consumer.id)
    read = json.loads(home.xcoms(consumer.id)[("read", "return_value")])
    assert read == [{"kind": "raw", "rows": 3}]


def test_an_alias_resolved_at_run_time_triggers_the_dags_scheduled_on_it(home: Home) -> None:
    produce(home, "produce_through_alias")
    with session_scope(home.url) as session:
        (event,) = list_events(session, "s3://bucket/resolved")
    assert (event.source_alias, event.extra) == ("daily-alias", {"via": "alias"})
    create_asset_triggered_runs(home.url)
    assert len(runs_of(home, "needs_alias")) == 1


def test_the_scheduler_loop_creates_asset_triggered_runs(home: Home) -> None:
    produce(home, "produce_clean")
    scheduler = Scheduler(home.settings, app=SimpleNamespace(main="stub"))  # type: ignore[arg-type]
    scheduler.run_once()
    assert len(runs_of(home, "needs_either")) == 1


def test_a_failed_producer_records_no_event(home: Home) -> None:
    home.write_dag(
        DAGS + "\nwith DAG('broken_producer'):\n"
        "    task(lambda: 1 / 0, task_id='boom', outlets=[raw])()\n",
    )
    assert home.sync().import_errors == {}
    run_pk = home.trigger("broken_producer")
    run_all(home, run_pk)
    assert home.run_state(run_pk) == "failed"
    with session_scope(home.url) as session:
        assert list_events(session, "s3://bucket/raw") == []
        listed = {summary.uri: summary for summary in list_assets(session)}
    assert listed["s3://bucket/raw"].consumers == (
        "needs_both",
        "needs_either",
        "needs_raw",
        "summary",
    )
    assert create_asset_triggered_runs(home.url) == []


def test_the_asset_state_store_keeps_values_across_runs_and_dags(home: Home) -> None:
    for expected in (1, 2):
        run_pk = home.trigger("stateful")
        run_all(home, run_pk)
        assert json.loads(home.xcoms(run_pk)[("advance", "return_value")]) == [expected, "gone"]


def test_an_alias_that_is_not_an_outlet_fails_the_task_in_one_line(home: Home) -> None:
    run_pk = home.trigger("unknown_alias")
    run_all(home, run_pk)
    assert home.run_state(run_pk) == "failed"
    error = home.ti(run_pk, "stray").error
    assert error == "InvalidAsset: unknown alias 'nowhere': it is not among the task's outlets"
    with session_scope(home.url) as session:
        assert list_events(session, "s3://bucket/raw") == []


def test_an_update_after_the_queue_was_read_is_left_for_the_next_run(home: Home) -> None:
    produce(home, "produce_raw")
    with session_scope(home.url) as session:
        read = queued_assets(session, "needs_raw")
    produce(home, "produce_raw")  # updated again between the read and the consume
    with session_scope(home.url) as session:
        consume(session, "needs_raw", read.values())
        assert set(queued_assets(session, "needs_raw")) == {
            "s3://bucket/raw",
            "name:s3://bucket/raw",
        }
    assert len(create_asset_triggered_runs(home.url)) >= 1
    with session_scope(home.url) as session:
        assert queued_assets(session, "needs_raw") == {}


def test_a_cron_partition_run_is_the_partition_of_its_logical_date(home: Home) -> None:
    end = dt.datetime(2026, 6, 14, 3, tzinfo=dt.UTC)
    with session_scope(home.url) as session:
        interval = (end - dt.timedelta(hours=1), end)
        run = create_run(session, "hourly_partitions", run_type="scheduled", data_interval=interval)
        session.flush()
        run_pk = run.id
    run_all(home, run_pk)
    key = "2026-06-14T03:00:00"
    assert json.loads(home.xcoms(run_pk)[("partition", "return_value")]) == [key, key]
    with session_scope(home.url) as session:
        (event,) = list_events(session, "file:///data/clean")
    assert event.partition_key == key


def test_a_cron_partition_dags_scheduled_and_backfilled_runs_store_their_partition(
    home: Home,
) -> None:
    start = dt.datetime(2026, 6, 14, 1, tzinfo=dt.UTC)
    with session_scope(home.url) as session:
        request = BackfillRequest("hourly_partitions", start, start + dt.timedelta(hours=1))
        create_backfill(session, request)
        (due,) = [d for d in due_dags(session, start) if d.dag_id == "hourly_partitions"]
        assert due.partitioned
        started = replace(due, spec=replace(due.spec, start_date=start))  # a first run is due
        assert create_due_runs(session, started, start + dt.timedelta(hours=5))
    runs = runs_of(home, "hourly_partitions")
    assert {"backfill", "scheduled"} == {run.run_type for run in runs}
    assert ("backfill", "2026-06-14T02:00:00") in [(r.run_type, r.partition_key) for r in runs]
    for run in runs:
        assert run.logical_date is not None
        assert run.partition_key == run.logical_date.strftime("%Y-%m-%dT%H:%M:%S")
