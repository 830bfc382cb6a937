"""What a process reports for ``/metrics``: counted in memory, flushed into the store now and then.

Every process of the fleet (schedulers, Celery workers and their supervisors, triggerers, API
servers), on whatever host, reports through the store the API server already reads, so one scrape
of ``/metrics`` on any API server sees the whole fleet (docs/metrics.md). A count costs a try
nothing in SQL: ``count``, ``observe`` and ``set_gauge`` add to this process's buffer under a
lock (about a microsecond), and a daemon thread (``start_flushing``) writes the buffer every
``TRADEWIND_METRICS_FLUSH_SECONDS`` in at most two statements, whatever the number of tries:

- counters and histograms are *deltas* added to one row per series (``value = value + delta``),
  rows sorted so that two flushers never wait on each other in opposite orders;
- gauges are *levels* kept per process (``host:pid``): the API server sums the fresh rows, and
  a process that died stops counting once its row is older than ``stale_after_seconds``.

A flush that fails (the store is away) puts its deltas back; they go out with the next one. What
a process counted after its last flush is lost if it is SIGKILLed (a few seconds' worth).

Names are Airflow's (``ti.finish`` is ``ti_finish``), declared once in ``METRICS``; what the API
server computes from the store at scrape time (queued and running task instances, pool slots,
import errors) is not reported here. A triggerer reports its running triggers with one line per
loop, after ``start_flushing(settings.sql_url)`` at its start::

    from state.core import set_gauge
    set_gauge("triggerer_triggers_running", len(running))
"""

from __future__ import annotations

import atexit
import bisect
import datetime as dt
import json
import logging
import os
import socket
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy import delete
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from state.core.db import session_scope
from state.core.models import MetricValue, utcnow
from state.core.upserts import insert_for

log = logging.getLogger("tradewind.metrics")

Kind = Literal["counter", "histogram", "gauge"]
#: Seconds: what a hand-over or a claim takes (milliseconds) up to a stalled queue (a minute).
FAST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
#: Seconds: a DAG run, from seconds to a day.
RUN_BUCKETS = (
    1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 21600.0, 86400.0,
)  # fmt: skip


@dataclass(frozen=True)
class Metric:
    """A metric a process reports: its kind, what it measures, the labels it takes."""

    kind: Kind
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()


#: Every metric a process reports, by its Prometheus name without the ``tradewind_`` prefix.
METRICS: dict[str, Metric] = {
    "ti_start": Metric("counter", "Tries started (claimed by a supervisor): Airflow's ti.start"),
    "ti_finish": Metric(
        "counter", "Tries ended, by the state they ended in: Airflow's ti.finish", ("state",)
    ),
    "zombies_killed": Metric(
        "counter", "Running tries given up for a missing heartbeat: Airflow's zombies_killed"
    ),
    "dagrun_duration_seconds": Metric(
        "histogram",
        "DAG runs' durations, start to end, by the state they ended in: "
        "Airflow's dagrun.duration.success / .failed",
        ("state",),
        RUN_BUCKETS,
    ),
    "scheduler_loop_duration_seconds": Metric(
        "histogram",
        "One scheduler loop: Airflow's scheduler.scheduler_loop_duration",
        (),
        FAST_BUCKETS,
    ),
    "claim_latency_seconds": Metric(
        "histogram", "A try's queueing to its claim by a supervisor", (), FAST_BUCKETS
    ),
    "chain_hop_seconds": Metric(
        "histogram",
        "A try's end to the start of a downstream try its end queued (a supervisor's hand-over)",
        (),
        FAST_BUCKETS,
    ),
    "outage_rides": Metric(
        "counter",
        "Outages of the store or the broker ridden out (recovered) or given up on",
        ("service", "outcome"),
    ),
    "outage_seconds": Metric(
        "counter", "Seconds spent waiting out outages, by service", ("service",)
    ),
    "iterable_items": Metric(
        "counter", "Items of iterable tasks checkpointed, by status", ("status",)
    ),
    "triggerer_triggers_running": Metric(
        "gauge", "Triggers running in the triggerers: Airflow's triggerer.triggers.running"
    ),
}

#: A process silent for an hour is gone: its gauge rows are deleted by the next flusher that
#: looks (one in this many flushes of each process, its first included).
FORGET_EVERY_FLUSHES = 720

SeriesKey = tuple[str, str]  # (name, labels as canonical JSON)


class UnknownMetric(ValueError):
    """A name that is not in ``METRICS``, or labels it does not take."""


def labels_key(name: str, labels: Mapping[str, str]) -> SeriesKey:
    """The series of ``name`` with ``labels``, checked against its declaration (once per series:
    a try's reports cost dictionary lookups, not a JSON encoding)."""
    asked = (name, tuple(sorted(labels.items())) if labels else ())
    key = _SERIES.get(asked)
    if key is None:
        key = _SERIES[asked] = _checked_key(name, labels)
    return key


#: The series seen in this process (few: labels take states, outcomes and services only).
_SERIES: dict[tuple[str, tuple[tuple[str, str], ...]], SeriesKey] = {}


def _checked_key(name: str, labels: Mapping[str, str]) -> SeriesKey:
    metric = METRICS.get(name)
    if metric is None:
        raise UnknownMetric(f"unknown metric {name!r}: declare it in state/core/metrics.py")
    if tuple(sorted(labels)) != tuple(sorted(metric.labels)):
        wanted = list(metric.labels)
        raise UnknownMetric(f"metric {name!r} takes labels {wanted}, got {sorted(labels)}")
    return name, json.dumps(dict(labels), sort_keys=True) if labels else ""


@dataclass
class Buffer:
    """What a process counted since its last flush: deltas, and its gauges' last levels."""

    counters: dict[SeriesKey, float] = field(default_factory=dict)
    # Per histogram series: one count per bucket (not cumulative: deltas add), then +Inf.
    buckets: dict[SeriesKey, list[int]] = field(default_factory=dict)
    sums: dict[SeriesKey, float] = field(default_factory=dict)
    gauges: dict[SeriesKey, float] = field(default_factory=dict)

    def count(self, key: SeriesKey, amount: float) -> None:
        self.counters[key] = self.counters.get(key, 0.0) + amount

    def observe(self, key: SeriesKey, value: float) -> None:
        bounds = METRICS[key[0]].buckets
        counts = self.buckets.setdefault(key, [0] * (len(bounds) + 1))
        counts[bisect.bisect_left(bounds, value)] += 1
        self.sums[key] = self.sums.get(key, 0.0) + value

    def empty(self) -> bool:
        return not (self.counters or self.buckets or self.gauges)

    def merge(self, earlier: Buffer) -> None:
        """Add an unflushed ``earlier`` buffer's deltas back (its gauges are older: not kept)."""
        for key, amount in earlier.counters.items():
            self.count(key, amount)
        for key, counts in earlier.buckets.items():
            mine = self.buckets.setdefault(key, [0] * len(counts))
            self.buckets[key] = [a + b for a, b in zip(mine, counts, strict=True)]
            self.sums[key] = self.sums.get(key, 0.0) + earlier.sums.get(key, 0.0)
        for key, level in earlier.gauges.items():
            self.gauges.setdefault(key, level)

    def delta_rows(self) -> list[dict[str, Any]]:
        """The counters' and histograms' deltas as rows of ``metric``, in key order."""
        rows = [_row(key, "", value) for key, value in self.counters.items() if value]
        for key, counts in self.buckets.items():
            bounds = [*map(bucket_label, METRICS[key[0]].buckets), "+Inf"]
            rows += [_row(key, bound, n) for bound, n in zip(bounds, counts, strict=True) if n]
            rows += [_row(key, "count", sum(counts)), _row(key, "sum", self.sums.get(key, 0.0))]
        return sorted(rows, key=lambda row: (row["name"], row["labels"], row["bucket"]))

    def gauge_rows(self, process: str) -> list[dict[str, Any]]:
        rows = [_row(key, "", level, process) for key, level in self.gauges.items()]
        return sorted(rows, key=lambda row: (row["name"], row["labels"]))


def bucket_label(bound: float) -> str:
    """A bucket's upper bound as Prometheus writes it (``le="0.005"``)."""
    return repr(float(bound))


def _row(key: SeriesKey, bucket: str, value: float, process: str = "") -> dict[str, Any]:
    return {"name": key[0], "labels": key[1], "bucket": bucket, "process": process, "value": value}


class Recorder:
    """This process's buffer, and the thread that flushes it (one per process)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.buffer = Buffer()
        self.url: str | None = None
        self.flush_seconds = 5.0
        self.process = f"{socket.gethostname()}:{os.getpid()}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False
        self._flushes = 0

    def count(self, name: str, amount: float = 1.0, **labels: str) -> None:
        key = labels_key(name, labels)
        with self.lock:
            self.buffer.count(key, amount)

    def observe(self, name: str, value: float, **labels: str) -> None:
        key = labels_key(name, labels)
        with self.lock:
            self.buffer.observe(key, value)

    def set_gauge(self, name: str, value: float, **labels: str) -> None:
        key = labels_key(name, labels)
        with self.lock:
            self.buffer.gauges[key] = value

    def start(self, url: str, flush_seconds: float) -> None:
        """Flush to the store at ``url`` every ``flush_seconds``, from a daemon thread."""
        self.url, self.flush_seconds = url, flush_seconds
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._flush_forever, name="metrics", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread and flush what is left (at exit, or in a test)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.flush_seconds + 5)
            self._thread = None
        self.flush()

    def _flush_forever(self) -> None:
        while not self._stop.wait(self.flush_seconds):
            self.flush()

    def take(self) -> Buffer:
        with self.lock:
            taken, self.buffer = self.buffer, Buffer(gauges=dict(self.buffer.gauges))
        return taken

    def flush(self) -> bool:
        """Write what was counted since the last flush; on failure keep it for the next."""
        if self.url is None:
            return False
        taken = self.take()
        if taken.empty():
            return True  # an idle process does not touch the store
        try:
            with session_scope(self.url) as session:
                write_buffer(session, taken, self.process)
                if self._flushes % FORGET_EVERY_FLUSHES == 0:
                    forget_stale_gauges(session, utcnow() - dt.timedelta(hours=1))
        except SQLAlchemyError as error:
            with self.lock:
                self.buffer.merge(taken)
            if not self._failing:
                log.warning("metrics: could not flush to the store, keeping them: %s", error)
            self._failing = True
            return False
        self._failing = False
        self._flushes += 1
        return True

    def after_fork(self) -> None:
        """In a forked child: the parent's counts, thread and lock (held, maybe, by a thread
        that is not in the child) are not this process's; it reports only once told to (a
        prefork pool process is: worker/celery_app.py; a DAG file's import child is not)."""
        self.lock = threading.Lock()
        self.buffer = Buffer()
        self.process = f"{socket.gethostname()}:{os.getpid()}"
        self._thread = None
        self._stop = threading.Event()
        self.url = None


def write_buffer(session: Session, buffer: Buffer, process: str) -> None:
    """The buffer's deltas added to the fleet's totals, its gauges set for ``process``."""
    now = utcnow()
    deltas = [{**row, "updated_at": now} for row in buffer.delta_rows()]
    insert = insert_for(session)
    keys = ["name", "labels", "bucket", "process"]
    if deltas:
        statement = insert(MetricValue).values(deltas)
        added = {"value": MetricValue.value + statement.excluded.value, "updated_at": now}
        session.execute(statement.on_conflict_do_update(index_elements=keys, set_=added))
    gauges = [{**row, "updated_at": now} for row in buffer.gauge_rows(process)]
    if gauges:
        statement = insert(MetricValue).values(gauges)
        level = {"value": statement.excluded.value, "updated_at": now}
        session.execute(statement.on_conflict_do_update(index_elements=keys, set_=level))


def forget_stale_gauges(session: Session, older_than: Any) -> int:
    """Delete the gauge rows of processes silent since ``older_than`` (they died)."""
    result = session.execute(
        delete(MetricValue).where(MetricValue.process != "", MetricValue.updated_at < older_than)
    )
    return int(getattr(result, "rowcount", 0) or 0)


RECORDER = Recorder()
os.register_at_fork(after_in_child=lambda: RECORDER.after_fork())


def count_metric(name: str, amount: float = 1.0, **labels: str) -> None:
    """Add ``amount`` to the counter ``name`` (a name of ``METRICS``) with ``labels``."""
    RECORDER.count(name, amount, **labels)


def observe_metric(name: str, value: float, **labels: str) -> None:
    """One observation of the histogram ``name``, in its unit (seconds)."""
    RECORDER.observe(name, value, **labels)


def set_gauge(name: str, value: float, **labels: str) -> None:
    """This process's level of the gauge ``name`` (the API server sums the live processes')."""
    RECORDER.set_gauge(name, value, **labels)


def start_flushing(url: str, flush_seconds: float = 5.0) -> None:
    """Report this process's metrics to the store at ``url``: a thread flushes them, and what is
    left is flushed at exit."""
    if RECORDER.url is None:
        atexit.register(RECORDER.stop)
    RECORDER.start(url, flush_seconds)


def stop_flushing() -> None:
    RECORDER.stop()


def metric_names() -> Sequence[str]:
    return sorted(METRICS)
