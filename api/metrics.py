"""``/metrics`` in Prometheus's text format: the fleet's reports and the store's counts of now.

One scrape reads the store once (``state.views.read_fleet``: five bounded statements) and the
broker's dead letters once, and turns them into metric families with ``prometheus_client``; no
state is kept between scrapes, so any API server of the fleet answers the same (scrape one of
them, or aggregate with ``max``, not ``sum``). Names: ``tradewind_`` and Airflow's metric with
its dots as underscores (docs/metrics.md has the table).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from state.core import METRICS, session_scope, utcnow
from state.views import FleetNow, PoolUse, Reported, read_fleet

log = logging.getLogger("tradewind.api.metrics")
PREFIX = "tradewind_"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def fresh_since(flush_seconds: float) -> dt.datetime:
    """A process's gauges count while its last flush is this recent (three flushes missed: gone)."""
    return utcnow() - dt.timedelta(seconds=3 * flush_seconds + 5)


def scrape(url: str, flush_seconds: float, dead_letters: int | None) -> bytes:
    """The exposition of the fleet behind the store at ``url``."""
    with session_scope(url) as session:
        now = read_fleet(session, fresh_since(flush_seconds))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(now, dead_letters))
    return generate_latest(registry)


class FleetCollector(Collector):
    """The families of one scrape, from what it read."""

    def __init__(self, now: FleetNow, dead_letters: int | None) -> None:
        self.now = now
        self.dead_letters = dead_letters

    def collect(self) -> Iterator[Metric]:
        yield from reported_families(self.now.reported)
        yield from store_families(self.now)
        if self.dead_letters is not None:
            yield GaugeMetricFamily(
                PREFIX + "broker_dead_letters",
                "Broker entries the transport could not decode, kept as dead letters",
                value=self.dead_letters,
            )


def reported_families(rows: Iterable[Reported]) -> Iterator[Metric]:
    """The families the processes reported, each declared metric present (zero if never seen)."""
    by_name: dict[str, list[Reported]] = defaultdict(list)
    for row in rows:
        by_name[row.name].append(row)
    for name, metric in METRICS.items():
        full = PREFIX + name
        seen = by_name.get(name, [])
        if metric.kind == "histogram":
            yield _histogram(full, metric.help, metric.labels, metric.buckets, seen)
            continue
        family_type = CounterMetricFamily if metric.kind == "counter" else GaugeMetricFamily
        family = family_type(full, metric.help, labels=metric.labels)
        for row in seen:
            family.add_metric(_label_values(row.labels, metric.labels), row.value)
        if not seen and not metric.labels:
            family.add_metric([], 0.0)
        yield family


def _label_values(labels: str, names: tuple[str, ...]) -> list[str]:
    values = json.loads(labels) if labels else {}
    return [str(values.get(name, "")) for name in names]


def _histogram(
    name: str, text: str, labels: tuple[str, ...], bounds: tuple[float, ...], rows: list[Reported]
) -> HistogramMetricFamily:
    """Buckets kept as per-bucket counts, turned cumulative as Prometheus wants them."""
    family = HistogramMetricFamily(name, text, labels=labels)
    series: dict[str, dict[str, float]] = defaultdict(dict)
    for row in rows:
        series[row.labels][row.bucket] = row.value
    if not series and not labels:
        series[""] = {}
    for key, cells in sorted(series.items()):
        running, buckets = 0.0, []
        for bound in [*map(repr, map(float, bounds)), "+Inf"]:
            running += cells.get(bound, 0.0)
            buckets.append((bound, running))
        family.add_metric(_label_values(key, labels), buckets, cells.get("sum", 0.0))
    return family


def store_families(now: FleetNow) -> Iterator[Metric]:
    """What the store says now: task instances queued and running, pools, import errors."""
    yield GaugeMetricFamily(
        PREFIX + "executor_queued_tasks",
        "Task instances queued (sent to the broker, not yet claimed): Airflow's "
        "executor.queued_tasks",
        value=now.task_instances.get("queued", 0),
    )
    yield GaugeMetricFamily(
        PREFIX + "executor_running_tasks",
        "Task instances running: Airflow's executor.running_tasks",
        value=now.task_instances.get("running", 0),
    )
    for suffix, text in _POOL_FAMILIES.items():
        family = GaugeMetricFamily(PREFIX + "pool_" + suffix, text, labels=["pool"])
        for use in now.pools:
            family.add_metric([use.name], _slots(use, suffix))
        yield family
    yield GaugeMetricFamily(
        PREFIX + "dag_processing_import_errors",
        "DAG files that do not import: Airflow's dag_processing.import_errors",
        value=now.import_errors,
    )


_POOL_FAMILIES = {
    "open_slots": "Slots free in the pool: Airflow's pool.open_slots",
    "queued_slots": "Slots held by queued tries: Airflow's pool.queued_slots",
    "running_slots": "Slots held by running tries: Airflow's pool.running_slots",
    "scheduled_slots": "Tries waiting for a slot: Airflow's pool.scheduled_slots",
}


def _slots(use: PoolUse, suffix: str) -> int:
    counts = {
        "open_slots": use.open,
        "queued_slots": use.queued,
        "running_slots": use.running,
        "scheduled_slots": use.scheduled,
    }
    return counts[suffix]
