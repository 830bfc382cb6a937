"""The collection side of the metrics: counted in memory, flushed as deltas, summed at a scrape.

The fleet test (tests/integration/test_metrics_fleet.py) scrapes a real API server after a run;
here each piece on its own, on SQLite.
"""

from __future__ import annotations

import datetime as dt
import os

import pytest

from broker_config import message_of
from state.core import metrics
from state.core.db import session_scope
from state.core.enums import TaskInstanceState
from state.core.metrics import Buffer, Recorder, UnknownMetric, labels_key, write_buffer
from state.core.models import utcnow
from state.core.outage import OutageLog, Retry, StoreUnavailable, ride_out
from state.engine.outcomes import Failed, Succeeded
from state.engine.try_life import HeldTry, claim, record
from state.views.metrics import read_fleet
from tests.state.harness import Home, counting_statements
from tests.state.test_outage import lost_connection
from tests.state.test_try_life import queued

TI = TaskInstanceState


def fleet_totals(
    home: Home, fresh_since: dt.datetime | None = None
) -> dict[tuple[str, str, str], float]:
    since = fresh_since or utcnow() - dt.timedelta(minutes=1)
    with session_scope(home.url) as session:
        now = read_fleet(session, since)
    return {(r.name, r.labels, r.bucket): r.value for r in now.reported}


def test_a_metric_must_be_declared_with_its_labels() -> None:
    assert labels_key("ti_finish", {"state": "success"}) == ("ti_finish", '{"state": "success"}')
    with pytest.raises(UnknownMetric, match="unknown metric 'ti_finished'"):
        labels_key("ti_finished", {})
    with pytest.raises(UnknownMetric, match=r"takes labels \['state'\], got \[\]"):
        labels_key("ti_finish", {})


def test_a_histogram_keeps_one_count_per_bucket_and_its_sum() -> None:
    buffer = Buffer()
    key = labels_key("claim_latency_seconds", {})
    for seconds in (0.001, 0.004, 0.3, 120.0):
        buffer.observe(key, seconds)
    cells = {row["bucket"]: row["value"] for row in buffer.delta_rows()}
    assert cells == {"0.005": 2, "0.5": 1, "+Inf": 1, "count": 4, "sum": pytest.approx(120.305)}


def test_flushes_add_deltas_and_gauges_are_per_process(home: Home) -> None:
    first, second = Buffer(), Buffer()
    finish = labels_key("ti_finish", {"state": "success"})
    running = labels_key("triggerer_triggers_running", {})
    first.count(finish, 3)
    second.count(finish, 2)
    first.gauges[running] = 5
    second.gauges[running] = 7
    with session_scope(home.url) as session:
        write_buffer(session, first, "host-a:1")
        write_buffer(session, second, "host-b:2")
        write_buffer(session, second, "host-b:2")  # a gauge is a level: set again, not added

    totals = fleet_totals(home)
    assert totals[("ti_finish", '{"state": "success"}', "")] == 7
    assert totals[("triggerer_triggers_running", "", "")] == 12


def test_a_silent_process_gauge_stops_counting(home: Home) -> None:
    buffer = Buffer()
    buffer.gauges[labels_key("triggerer_triggers_running", {})] = 4
    with session_scope(home.url) as session:
        write_buffer(session, buffer, "gone:1")

    later = utcnow() + dt.timedelta(seconds=1)
    assert ("triggerer_triggers_running", "", "") not in fleet_totals(home, later)
    with session_scope(home.url) as session:
        assert metrics.forget_stale_gauges(session, later) == 1


def test_a_failed_flush_keeps_its_counts_for_the_next(home: Home, tmp_path: object) -> None:
    recorder = Recorder()
    recorder.url = f"sqlite:///{home.root / 'no-such-dir' / 'x.db'}"  # cannot be opened
    assert recorder.flush() is True  # nothing counted: the store is not even asked
    recorder.count("ti_start", 2)
    assert recorder.flush() is False
    recorder.count("ti_start")

    recorder.url = home.url
    assert recorder.flush() is True
    assert fleet_totals(home)[("ti_start", "", "")] == 3


def test_a_forked_child_starts_with_nothing_of_its_parents() -> None:
    recorder = Recorder()
    recorder.count("ti_start")
    recorder.url = "sqlite://"
    recorder.after_fork()
    assert (recorder.buffer.counters, recorder.url) == ({}, None)
    assert recorder.process.endswith(f":{os.getpid()}")


def test_a_try_counts_its_start_its_wait_and_its_finish(home: Home) -> None:
    metrics.RECORDER.take()  # what earlier tests in this process counted
    enqueue = queued(home)
    held = claim(home.url, message_of(enqueue, handed_over=True))
    assert isinstance(held, HeldTry)
    record(home.url, held, Failed("boom", retryable=False))

    counted = metrics.RECORDER.take()
    assert counted.counters[("ti_start", "")] == 1
    assert counted.counters[("ti_finish", '{"state": "failed"}')] == 1
    assert sum(counted.buckets[("claim_latency_seconds", "")]) == 1
    assert sum(counted.buckets[("chain_hop_seconds", "")]) == 1


def test_counting_a_try_sends_no_statement_of_its_own(home: Home) -> None:
    enqueue = queued(home)
    metrics.RECORDER.take()
    with counting_statements(home.url) as counter:
        held = claim(home.url, message_of(enqueue, handed_over=True))
        assert isinstance(held, HeldTry)
        record(home.url, held, Succeeded())

    assert sum(metrics.RECORDER.take().counters.values()) == 2  # its start and its finish
    assert counter.statements
    assert not [sql for sql in counter.statements if "metric" in sql]


def test_a_try_queued_by_a_scheduler_is_no_chain_hop(home: Home) -> None:
    metrics.RECORDER.take()
    held = claim(home.url, message_of(queued(home)))
    assert isinstance(held, HeldTry)
    record(home.url, held, Succeeded())

    counted = metrics.RECORDER.take()
    assert counted.counters[("ti_finish", '{"state": "success"}')] == 1
    assert ("chain_hop_seconds", "") not in counted.buckets


def test_an_outage_ridden_out_is_counted_with_its_length() -> None:
    metrics.RECORDER.take()
    outage = OutageLog("test", service="the broker")
    outage.failed(OSError("down"), 10.0)
    outage.recovered(12.5)

    counted = metrics.RECORDER.take()
    assert counted.counters[("outage_rides", '{"outcome": "recovered", "service": "broker"}')] == 1
    assert counted.counters[("outage_seconds", '{"service": "broker"}')] == 2.5


def test_an_outage_given_up_on_is_counted() -> None:
    metrics.RECORDER.take()

    def fails() -> None:
        raise lost_connection()

    retry = Retry("test", budget=0.0, sleep=lambda _seconds: None)
    with pytest.raises(StoreUnavailable):
        ride_out(fails, retry)

    counted = metrics.RECORDER.take()
    assert counted.counters[("outage_rides", '{"outcome": "gave_up", "service": "store"}')] == 1
