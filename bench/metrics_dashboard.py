"""The Grafana dashboard of docs/metrics.md, and its picture drawn from a real fleet's scrapes.

The panels are declared once, below: each with its PromQL (what Grafana runs) and the same
computation in Python over a series of scrapes (what the picture shows). There is no Grafana
here, so the picture is drawn with matplotlib, panel for panel:

    python bench/metrics_dashboard.py [--seconds 100]     # a fleet, scrapes, the picture
    python bench/metrics_dashboard.py --dashboard-only    # only docs/grafana/tradewind.json

The fleet: PostgreSQL, Redis, one scheduler, one Celery worker (-c 2), the API server. Runs of
two DAGs are triggered throughout (a chain of six short tasks every 2 s; a fan-out through a
two-slot pool with some failures every 8 s); a DAG file that does not import is added at 40% of
the time and removed at 70%. ``/metrics`` is scraped over HTTP every second.

Writes docs/grafana/tradewind.json, docs/grafana/dashboard.png and
bench/results/metrics_dashboard.json (the scrapes drawn from).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "bench"))

from promql_eval import (  # noqa: E402
    WINDOW_SECONDS,
    Line,
    Scrape,
    Series,
    gauge,
    gauge_by,
    increase,
    quantile,
    rate_by,
)

DASHBOARD = ROOT / "docs" / "grafana" / "tradewind.json"
PICTURE = ROOT / "docs" / "grafana" / "dashboard.png"
RESULTS = ROOT / "bench" / "results" / "metrics_dashboard.json"
TOKEN = "dashboard-bench-scrape-token"


@dataclass(frozen=True)
class Query:
    """One line of a panel: Grafana's target, and the same in Python (None: one per label)."""

    legend: str
    promql: str
    draw: Callable[[Series], list[Line]]


@dataclass(frozen=True)
class Panel:
    title: str
    unit: str  # Grafana's: s, short
    queries: tuple[Query, ...]


# --- the dashboard ---------------------------------------------------------------------------

W = "[$__rate_interval]"
#: The dashboard's ``$pool`` variable, as the picture sets it (the default pool's 128 open slots
#: would flatten the others).
PICTURED_POOL = "narrow"


def _quantiles(name: str) -> tuple[Query, ...]:
    return tuple(
        Query(
            f"p{int(q * 100)}",
            f"histogram_quantile({q}, sum by (le) (rate({name}_bucket{W})))",
            quantile(q, name, f"p{int(q * 100)}"),
        )
        for q in (0.5, 0.99)
    )


PANELS = (
    Panel("Scheduler loop", "s", _quantiles("tradewind_scheduler_loop_duration_seconds")),
    Panel(
        "Task instances queued / running",
        "short",
        (
            Query(
                "queued",
                "tradewind_executor_queued_tasks",
                gauge("tradewind_executor_queued_tasks", "queued"),
            ),
            Query(
                "running",
                "tradewind_executor_running_tasks",
                gauge("tradewind_executor_running_tasks", "running"),
            ),
        ),
    ),
    Panel(
        f"Pool slots (pool = {PICTURED_POOL})",
        "short",
        tuple(
            Query(
                f"{{{{pool}}}} {kind}",
                f'tradewind_pool_{kind}_slots{{pool=~"$pool"}}',
                gauge_by(f"tradewind_pool_{kind}_slots", "pool", f" {kind}", PICTURED_POOL),
            )
            for kind in ("open", "running", "queued", "scheduled")
        ),
    ),
    Panel(
        "Try finishes by state (/s)",
        "short",
        (
            Query(
                "{{state}}",
                f"sum by (state) (rate(tradewind_ti_finish_total{W}))",
                rate_by("tradewind_ti_finish_total", "state"),
            ),
        ),
    ),
    Panel(
        "DAG run durations (p50 by state)",
        "s",
        (
            Query(
                "p50 {{state}}",
                "histogram_quantile(0.5, sum by (le, state) "
                f"(rate(tradewind_dagrun_duration_seconds_bucket{W})))",
                quantile(0.5, "tradewind_dagrun_duration_seconds", "p50", by="state"),
            ),
        ),
    ),
    Panel(
        "Zombies killed",
        "short",
        (
            Query(
                "zombies",
                f"increase(tradewind_zombies_killed_total{W})",
                increase("tradewind_zombies_killed_total", "zombies"),
            ),
        ),
    ),
    Panel(
        "Import errors",
        "short",
        (
            Query(
                "files",
                "tradewind_dag_processing_import_errors",
                gauge("tradewind_dag_processing_import_errors", "files"),
            ),
        ),
    ),
    Panel("Claim latency", "s", _quantiles("tradewind_claim_latency_seconds")),
    Panel("Chain hop", "s", _quantiles("tradewind_chain_hop_seconds")),
    Panel(
        "Broker dead letters and outages",
        "short",
        (
            Query(
                "dead letters",
                "tradewind_broker_dead_letters",
                gauge("tradewind_broker_dead_letters", "dead letters"),
            ),
            Query(
                "outages {{service}}",
                f"sum by (service) (increase(tradewind_outage_rides_total{W}))",
                rate_by("tradewind_outage_rides_total", "service"),
            ),
        ),
    ),
)


def grafana_dashboard() -> dict[str, Any]:
    source = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
    panels = []
    for n, panel in enumerate(PANELS):
        panels.append(
            {
                "id": n + 1,
                "type": "timeseries",
                "title": panel.title.replace(f"pool = {PICTURED_POOL}", "pool = $pool"),
                "datasource": source,
                "gridPos": {"h": 8, "w": 8, "x": (n % 3) * 8, "y": (n // 3) * 8},
                "fieldConfig": {"defaults": {"unit": panel.unit}, "overrides": []},
                "options": {"legend": {"displayMode": "list", "placement": "bottom"}},
                "targets": [
                    {
                        "refId": chr(65 + k),
                        "datasource": source,
                        "expr": q.promql,
                        "legendFormat": q.legend,
                    }
                    for k, q in enumerate(panel.queries)
                ],
            }
        )
    return {
        "__inputs": [
            {
                "name": "DS_PROMETHEUS",
                "label": "Prometheus",
                "type": "datasource",
                "pluginId": "prometheus",
                "pluginName": "Prometheus",
            }
        ],
        "title": "Tradewind",
        "uid": "tradewind-fleet",
        "tags": ["tradewind", "airflow"],
        "schemaVersion": 39,
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "30s",
        "templating": {
            "list": [
                {
                    "name": "pool",
                    "label": "pool",
                    "type": "query",
                    "datasource": {"type": "prometheus", "uid": "${DS_PROMETHEUS}"},
                    "query": "label_values(tradewind_pool_open_slots, pool)",
                    "includeAll": True,
                    "multi": True,
                    "current": {"text": "All", "value": "$__all"},
                    "refresh": 2,
                }
            ]
        },
        "panels": panels,
    }


def draw(series: Series, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = 3
    rows = math.ceil(len(PANELS) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(15, 3.3 * rows), squeeze=False)
    for n, panel in enumerate(PANELS):
        ax = axes[n // columns][n % columns]
        for query in panel.queries:
            for legend, points in query.draw(series):
                ax.plot(series.times, points, label=legend, linewidth=1.4)
        ax.set_title(panel.title, fontsize=10, loc="left")
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=8)
        if panel.unit == "s":
            ax.set_ylabel("seconds", fontsize=8)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper left")
    for n in range(len(PANELS), rows * columns):
        axes[n // columns][n % columns].axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("seconds into the run", fontsize=8)
    figure.suptitle(
        "Tradewind dashboard (docs/grafana/tradewind.json), drawn with matplotlib from a real "
        f"fleet's /metrics scraped every second; rate window {WINDOW_SECONDS:g} s",
        fontsize=10,
    )
    figure.tight_layout()
    figure.savefig(path, dpi=90)


# --- the fleet --------------------------------------------------------------------------------

DAG_FILE = """
import random
import time

from tradewind import DAG, task


@task
def step():
    time.sleep(random.uniform(0.05, 0.3))


@task(pool="narrow")
def narrow():
    time.sleep(0.6)


@task(retries=0)
def flaky():
    time.sleep(0.1)
    if random.random() < 0.4:
        raise RuntimeError("flaky, on purpose")


with DAG("dash_chain", max_active_runs=16):
    previous = None
    for i in range(6):
        current = step.override(task_id=f"s{i}")()
        if previous is not None:
            previous >> current
        previous = current

with DAG("dash_fan", max_active_runs=16):
    for i in range(8):
        narrow.override(task_id=f"n{i}")()
    for i in range(3):
        flaky.override(task_id=f"f{i}")()
"""


def scrape(base: str) -> Scrape:
    from prometheus_client.parser import text_string_to_metric_families

    request = urllib.request.Request(
        f"{base}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        text = reply.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def run_fleet(seconds: float) -> Series:
    import socket

    from fleet_throughput import bench_database, fleet_env, own_broker, running_fleet, start, stop

    from state.core.db import session_scope
    from state.core.migrate import upgrade
    from state.engine import set_pool
    from state.engine.runs import create_run

    broker = own_broker()
    with (
        tempfile.TemporaryDirectory(prefix="tw-dashboard-") as folder,
        bench_database("tw_dash_") as url,
    ):
        workdir = Path(folder)
        dags = workdir / "dags"
        dags.mkdir()
        (dags / "dash.py").write_text(DAG_FILE)
        env = fleet_env(
            url,
            broker,
            dags,
            workdir / "home",
            TRADEWIND_METRICS_TOKEN=TOKEN,
            TRADEWIND_METRICS_FLUSH_SECONDS="1",
        )
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        base = f"http://127.0.0.1:{port}"
        upgrade(url)
        with session_scope(url) as session:  # before the DAGs are synced: dash_fan takes it
            set_pool(session, "narrow", 2)
        with running_fleet(url, dags, env, workdir):
            api = start(
                [sys.executable, "-m", "cli", "api-server", "--port", str(port)],
                env,
                workdir / "api.log",
            )
            try:
                return drive(url, dags, base, seconds, create_run, session_scope)
            finally:
                stop(api)


def drive(
    url: str, dags: Path, base: str, seconds: float, create_run: Any, session_scope: Any
) -> Series:
    deadline = time.monotonic() + 60
    while True:
        try:
            scrape(base)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    times: list[float] = []
    scrapes: list[Scrape] = []
    start = time.monotonic()
    next_chain = next_fan = 0.0
    broken = dags / "broken.py"
    n = 0
    while (elapsed := time.monotonic() - start) < seconds:
        if elapsed >= next_chain:
            with session_scope(url) as session:
                create_run(session, "dash_chain", run_id=f"chain_{n}")
            next_chain += 2.0
            n += 1
        if elapsed >= next_fan:
            with session_scope(url) as session:
                create_run(session, "dash_fan", run_id=f"fan_{n}")
            next_fan += 8.0
            n += 1
        if 0.4 * seconds <= elapsed < 0.7 * seconds and not broken.exists():
            broken.write_text("import this_module_does_not_exist\n")
        elif elapsed >= 0.7 * seconds and broken.exists():
            broken.unlink()
        times.append(round(elapsed, 2))
        scrapes.append(scrape(base))
        time.sleep(max(0.0, 1.0 - (time.monotonic() - start - elapsed)))
    return Series(times, scrapes)


def save(series: Series) -> None:
    rows = [
        {
            "t": t,
            "samples": [[name, dict(labels), value] for (name, labels), value in scrape.items()],
        }
        for t, scrape in zip(series.times, series.scrapes, strict=True)
    ]
    kept = {"window_seconds": WINDOW_SECONDS, "scrapes": rows}
    RESULTS.write_text(json.dumps(kept, separators=(",", ":")) + "\n")


def load() -> Series:
    rows = json.loads(RESULTS.read_text())["scrapes"]
    return Series(
        [row["t"] for row in rows],
        [
            {(name, tuple(sorted(labels.items()))): value for name, labels, value in row["samples"]}
            for row in rows
        ],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=100.0)
    parser.add_argument("--dashboard-only", action="store_true", help="only the Grafana JSON")
    parser.add_argument("--redraw", action="store_true", help="the picture from the saved scrapes")
    options = parser.parse_args()
    DASHBOARD.parent.mkdir(parents=True, exist_ok=True)
    DASHBOARD.write_text(json.dumps(grafana_dashboard(), indent=2) + "\n")
    print(f"wrote {DASHBOARD}")
    if options.dashboard_only:
        return
    if options.redraw:
        series = load()
    else:
        series = run_fleet(options.seconds)
        save(series)
    draw(series, PICTURE)
    last = series.scrapes[-1]
    for key in sorted(last):
        if key[0].endswith(("_total", "_count")) or "slots" in key[0]:
            print(f"{key[0]}{dict(key[1]) or ''} = {last[key]:g}")
    print(f"wrote {PICTURE} and {RESULTS} ({len(series.times)} scrapes)")


if __name__ == "__main__":
    main()
