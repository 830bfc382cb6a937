"""History at scale (issue 30): does a store holding 10,000,000 task instances slow anything?

One PostgreSQL database, measured twice in the same run: first nearly empty (the bench's DAGs,
25 ended runs of the DAG whose grid is shown), then after a bulk ``COPY`` of 1,000,000 ended
runs of 200 DAGs with 10 task instances and one XCom each (``--scale`` shrinks it), vacuumed and
analysed as autovacuum would. Each time:

- the scheduler's loop pass (``run_once``, 10 active runs of 100 tasks) and one run's first pass;
- trigger-to-first-start and a chain hop, through a real fleet (a scheduler, a Celery worker
  with 2 threads, Redis);
- the DAG list page, a grid page, the API's DAG list and its task-instance lists (one DAG, all).

Then ``tradewind db clean`` of the older half, run as a user runs it while the fleet works: its
duration, and the longest a running try's heartbeat (an UPDATE of its row every 50 ms) and a
chain hop waited meanwhile. Goals: each figure at most 1.2x its empty-store one; no stall over
1 s during the clean.

    python bench/history.py [--scale 1.0] [--n 20]

Prints a table, writes bench/results/history.json and docs/benchmarks/history.png.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg
from sqlalchemy import select, update

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from fastapi.testclient import TestClient  # noqa: E402
from fleet_throughput import (  # noqa: E402
    bench_database,
    fleet_env,
    own_broker,
    running_fleet,
)
from ui import PASSWORD, measure, sign_in  # noqa: E402

import scheduler.loop as loop  # noqa: E402
from api import create_app  # noqa: E402
from api.security import hash_password  # noqa: E402
from scheduler import Scheduler  # noqa: E402
from scheduler.dag_sync import sync_dags  # noqa: E402
from state.core.db import session_scope  # noqa: E402
from state.core.migrate import upgrade  # noqa: E402
from state.core.models import DEFAULT_POOL, DagRun, TaskInstance, utcnow  # noqa: E402
from state.engine.pools import set_pool  # noqa: E402
from state.engine.runs import create_run  # noqa: E402
from state.engine.scheduling import schedule_run_by_pk  # noqa: E402
from state.records.users import Role, create_user  # noqa: E402
from tradewind.settings import Settings, reload_settings  # noqa: E402

DAGS = 200
TASKS = 10
FULL_RUNS = 1_000_000
CHAIN = 30
WIDE = 100
ACTIVE_RUNS = 10
#: The fill's runs end over these two years, the newest two days ago.
SPAN = dt.timedelta(days=730)

DAG_FILE = f"""
from tradewind import DAG, chain, task


@task
def noop():
    return None


for d in range({DAGS}):
    with DAG(f"hist_{{d:03d}}", max_active_runs=1000):
        chain(*(noop.override(task_id=f"t{{i}}")() for i in range({TASKS})))

with DAG("bench_chain", max_active_runs=1000):
    chain(*(noop.override(task_id=f"c{{i}}")() for i in range({CHAIN})))

with DAG("probe", max_active_runs=1000):
    noop.override(task_id="start")()

with DAG("wide", max_active_tasks=100_000, max_active_runs=1000):
    for i in range({WIDE}):
        noop.override(task_id=f"w{{i}}")()
"""

PAGES = {
    "DAG list page": "/dags",
    "grid page": "/dags/hist_000",
    "API DAG list": "/api/v2/dags?limit=100",
    "API task instances, one DAG": "/api/v2/dags/hist_000/dagRuns/~/taskInstances?limit=100",
    "API task instances, all": "/api/v2/dags/~/dagRuns/~/taskInstances?limit=100",
}


# --- the fill -----------------------------------------------------------------------------


def _end_of(index: int, runs: int, newest: dt.datetime) -> dt.datetime:
    """The end of run ``index`` of ``runs``: older indexes ended earlier, over ``SPAN``."""
    return newest - SPAN * (runs - index) / runs


def fill(
    url: str, runs: int, newest: dt.datetime, dags: int = DAGS, prefix: str = "scheduled"
) -> float:
    """COPY ``runs`` ended runs (10 task instances and an XCom each), DAG by DAG; seconds."""
    started = time.perf_counter()
    per_dag = runs // dags
    with psycopg.connect(url) as conn:
        conn.execute("SET synchronous_commit = off")
        for d in range(dags):
            dag_id = f"hist_{d:03d}"
            ends = [_end_of(k * dags + d, runs, newest) for k in range(per_dag)]
            _copy_dag(conn, dag_id, ends, prefix)
            conn.commit()
            if d % 20 == 19:
                print(
                    f"  filled {d + 1}/{dags} DAGs, {time.perf_counter() - started:.0f} s",
                    flush=True,
                )
    return time.perf_counter() - started


def _copy_dag(
    conn: psycopg.Connection[Any], dag_id: str, ends: list[dt.datetime], prefix: str
) -> None:
    run_columns = (
        "dag_id, run_id, state, run_type, conf, created_at, start_date, end_date, logical_date"
    )
    ti_columns = (
        "dag_id, run_id, task_id, map_index, state, try_number, max_tries, generation, queue,"
        " pool, queued_resends, deliveries, start_date, end_date, hostname"
    )
    xcom_columns = "dag_id, run_id, task_id, map_index, key, value, created_at"
    runs, tis, xcoms = [], [], []
    for k, end in enumerate(ends):
        start = end - dt.timedelta(minutes=5)
        logical = start.isoformat()
        run_id = f"{prefix}__{logical}"
        state = "failed" if k % 20 == 7 else "success"
        runs.append(
            f"{dag_id}\t{run_id}\t{state}\tscheduled\t{{}}\t{logical}\t{logical}\t{end.isoformat()}\t{logical}\n"
        )
        for i in range(TASKS):
            ti_state = "failed" if state == "failed" and i == TASKS - 1 else "success"
            ti_start = (start + dt.timedelta(seconds=20 * i)).isoformat()
            ti_end = (start + dt.timedelta(seconds=20 * i + 5)).isoformat()
            tis.append(
                f"{dag_id}\t{run_id}\tt{i}\t-1\t{ti_state}\t1\t1\t0\tdefault\tdefault_pool\t0\t1"
                f"\t{ti_start}\t{ti_end}\tworker-1\n"
            )
        xcoms.append(f"{dag_id}\t{run_id}\tt0\t-1\treturn_value\t42\t{logical}\n")
    with conn.cursor() as cursor:
        for table, columns, lines in (
            ("dag_run", run_columns, runs),
            ("task_instance", ti_columns, tis),
            ("xcom", xcom_columns, xcoms),
        ):
            with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                copy.write("".join(lines))


def vacuum(url: str) -> float:
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")
    return time.perf_counter() - started


def table_sizes(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        return {
            table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # type: ignore[index]
            for table in ("dag_run", "task_instance", "xcom")
        }


# --- the figures ----------------------------------------------------------------------------


def median_ms(values: list[float]) -> float:
    return 1000 * statistics.median(values)


def measure_pages(settings: Settings, url: str, n: int) -> dict[str, float]:
    with TestClient(create_app(settings)) as client:
        sign_in(client)
        return {name: measure(client, url, path, n)["p50_ms"] for name, path in PAGES.items()}


@contextmanager
def no_broker() -> Iterator[None]:
    """The scheduler's messages go nowhere: what is measured is its SQL."""
    real = loop.publish_many
    loop.publish_many = lambda app, ready: len(ready)  # type: ignore[assignment]
    try:
        yield
    finally:
        loop.publish_many = real


def measure_scheduler(settings: Settings, url: str, tag: str, n: int) -> dict[str, float]:
    """The loop's pass with active runs, and one run's first pass (its tasks all queued)."""
    with no_broker():
        scheduler = Scheduler(settings, app=SimpleNamespace(main="bench"))  # type: ignore[arg-type]
        scheduler.run_once()  # the sync
        with session_scope(url) as session:
            for k in range(ACTIVE_RUNS):
                create_run(session, "wide", run_id=f"{tag}-active-{k}")
        scheduler.run_once()  # every task queued: the passes after are the steady state
        loop_passes = []
        for _ in range(n):
            started = time.perf_counter()
            scheduler.run_once()
            loop_passes.append(time.perf_counter() - started)
        run_passes = []
        for k in range(max(3, n // 4)):
            with session_scope(url) as session:
                pk = create_run(session, "wide", run_id=f"{tag}-first-{k}").id
            started = time.perf_counter()
            with session_scope(url) as session:
                schedule_run_by_pk(session, pk)
            run_passes.append(time.perf_counter() - started)
    end_runs(url, "wide")
    return {
        "scheduler loop pass": median_ms(loop_passes),
        "a run's first pass": median_ms(run_passes),
    }


def end_runs(url: str, dag_id: str) -> None:
    """Fail the bench's own active runs: out of the way of what comes next."""
    now = utcnow()
    with session_scope(url) as session:
        session.execute(
            update(TaskInstance)
            .where(TaskInstance.dag_id == dag_id, TaskInstance.state != "failed")
            .values(state="failed", end_date=now)
        )
        session.execute(
            update(DagRun).where(DagRun.dag_id == dag_id).values(state="failed", end_date=now)
        )


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)


def run_state(url: str, dag_id: str, run_id: str) -> str:
    with session_scope(url) as session:
        return str(session.scalar(select(DagRun.state).filter_by(dag_id=dag_id, run_id=run_id)))


def trigger_to_start(url: str, tag: str, n: int) -> float:
    """From a run's creation to its first task's start (its claim), median of ``n`` runs."""
    waits = []
    for k in range(n):
        run_id = f"{tag}-probe-{k}"
        with session_scope(url) as session:
            created = create_run(session, "probe", run_id=run_id).created_at
        wait_for(lambda r=run_id: run_state(url, "probe", r) in ("success", "failed"), 120, run_id)
        with session_scope(url) as session:
            start = session.scalar(select(TaskInstance.start_date).filter_by(run_id=run_id))
        waits.append((start - created).total_seconds())
    return median_ms(waits)


def chain_hops(url: str, run_id: str) -> list[float]:
    """Each hop of a finished chain run: a task's start minus its upstream's end, in ms."""
    with session_scope(url) as session:
        rows = session.execute(
            select(TaskInstance.task_id, TaskInstance.start_date, TaskInstance.end_date).where(
                TaskInstance.dag_id == "bench_chain", TaskInstance.run_id == run_id
            )
        )
        times = {task_id: (start, end) for task_id, start, end in rows}
    return [
        (times[f"c{i}"][0] - times[f"c{i - 1}"][1]).total_seconds() * 1000 for i in range(1, CHAIN)
    ]


def run_chain(url: str, run_id: str) -> list[float]:
    with session_scope(url) as session:
        create_run(session, "bench_chain", run_id=run_id)
    wait_for(lambda: run_state(url, "bench_chain", run_id) in ("success", "failed"), 600, run_id)
    return chain_hops(url, run_id)


def measure_fleet(
    url: str, dags: Path, env: dict[str, str], work: Path, tag: str
) -> dict[str, float]:
    work.mkdir(parents=True, exist_ok=True)
    with running_fleet(url, dags, env, work):
        run_chain(url, f"{tag}-warm")  # the worker's first forks and imports
        return {
            "trigger to first start": trigger_to_start(url, tag, 8),
            "chain hop": statistics.median(run_chain(url, f"{tag}-chain")),
        }


# --- the clean while a fleet runs -----------------------------------------------------------


class HeartbeatProbe:
    """A running try's heartbeat: its row updated every 50 ms; the longest an update took."""

    def __init__(self, url: str, ti_id: int) -> None:
        self.url, self.ti_id = url, ti_id
        self.samples: list[tuple[float, float]] = []  # (when, seconds it took)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True)

    def _beat(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self.stop.is_set():
                started = time.monotonic()
                conn.execute(
                    "UPDATE task_instance SET last_heartbeat = now() WHERE id = %s", (self.ti_id,)
                )
                self.samples.append((started, time.monotonic() - started))
                self.stop.wait(0.05)

    def longest_ms(self, start: float, end: float) -> float:
        return 1000 * max((took for when, took in self.samples if start <= when <= end), default=0)


def live_try(url: str) -> int:
    """A running run with a running try, as a worker holds one (its heartbeat is the probe)."""
    with session_scope(url) as session:
        run = create_run(session, "probe", run_id="live")
        session.flush()
        session.execute(
            update(DagRun).where(DagRun.id == run.id).values(state="running", start_date=utcnow())
        )
        ti = session.scalars(select(TaskInstance).filter_by(dag_id="probe", run_id="live")).one()
        ti.state, ti.try_number, ti.start_date, ti.hostname = "running", 1, utcnow(), "bench"
        ti.last_heartbeat = utcnow()
        return ti.id


def clean_while_running(
    url: str, dags: Path, env: dict[str, str], work: Path, older_than: dt.datetime
) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    ti_id = live_try(url)
    probe = HeartbeatProbe(url, ti_id)
    hops: list[tuple[float, list[float]]] = []
    chains_stop = threading.Event()

    def chains() -> None:
        k = 0
        while not chains_stop.is_set():
            started = time.monotonic()
            hops.append((started, run_chain(url, f"during-{k}")))
            k += 1

    with running_fleet(url, dags, env, work):
        run_chain(url, "clean-warm")
        probe.thread.start()
        chain_thread = threading.Thread(target=chains, daemon=True)
        chain_thread.start()
        time.sleep(5)  # the fleet's ordinary figures before the clean
        started = time.monotonic()
        clean = ["db", "clean", "--older-than", older_than.isoformat(), "--yes"]
        done = subprocess.run(
            [sys.executable, "-m", "cli", *clean],
            env=env, cwd=ROOT, capture_output=True, text=True, check=False,
        )  # fmt: skip
        ended = time.monotonic()
        time.sleep(3)
        chains_stop.set()
        chain_thread.join(600)
        probe.stop.set()
        probe.thread.join(10)
    if done.returncode != 0:
        raise RuntimeError(f"db clean failed: {done.stderr[-2000:]}")
    during = [hop for when, chain in hops if started <= when <= ended for hop in chain]
    before = [hop for when, chain in hops if when < started for hop in chain]
    with session_scope(url) as session:
        live_state = session.scalar(select(TaskInstance.state).where(TaskInstance.id == ti_id))
    return {
        "db clean seconds": ended - started,
        "longest heartbeat during clean ms": probe.longest_ms(started, ended),
        "longest heartbeat before clean ms": probe.longest_ms(0, started),
        "longest chain hop during clean ms": max(during, default=0.0),
        "chain hops during clean": len(during),
        "longest chain hop before clean ms": max(before, default=0.0),
        "live try after clean": live_state,
        "clean output tail": done.stdout.strip().splitlines()[-1:],
    }


# --- the run ---------------------------------------------------------------------------------


def measure_all(
    settings: Settings, url: str, dags: Path, env: dict[str, str], work: Path, tag: str, n: int
) -> dict[str, float]:
    figures = measure_scheduler(settings, url, tag, n)
    figures |= measure_fleet(url, dags, env, work / tag, tag)
    figures |= measure_pages(settings, url, n)
    for name, value in figures.items():
        print(f"  {tag}: {name}: {value:.1f} ms", flush=True)
    return figures


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f} {five:.1f} {fifteen:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="of 1,000,000 runs (default 1)")
    parser.add_argument("--n", type=int, default=20, help="requests and passes per figure")
    args = parser.parse_args()
    runs = int(FULL_RUNS * args.scale) // DAGS * DAGS
    result: dict[str, Any] = {"runs": runs, "task_instances": runs * TASKS, "load": {}}
    with tempfile.TemporaryDirectory() as tmp, bench_database("tw_bench_history_") as url:
        work = Path(tmp)
        dags = work / "dags"
        dags.mkdir()
        (dags / "bench.py").write_text(DAG_FILE)
        env = fleet_env(url, own_broker(), dags, work / "home")
        os.environ.update({k: v for k, v in env.items() if k.startswith("TRADEWIND_")})
        settings = reload_settings()
        upgrade(url)
        with session_scope(url) as session:
            sync_dags(session, dags)
            set_pool(session, DEFAULT_POOL, 1_000_000)
            create_user(session, "admin", hash_password(PASSWORD), Role.ADMIN)
        newest = utcnow() - dt.timedelta(days=2)
        # The grid's runs on the empty store: 25 of the DAG it shows, as the fill makes them.
        fill(url, 25, newest, dags=1, prefix="recent")
        vacuum(url)
        result["load"]["start"] = load()
        result["empty"] = measure_all(settings, url, dags, env, work, "empty", args.n)
        print(f"filling {runs:,} runs, {runs * TASKS:,} task instances (load {load()})", flush=True)
        result["fill_seconds"] = fill(url, runs, newest - dt.timedelta(hours=1))
        result["vacuum_seconds"] = vacuum(url)
        result["sizes"] = table_sizes(url)
        took = f"{result['fill_seconds']:.0f} s, vacuumed in {result['vacuum_seconds']:.0f} s"
        print(f"  filled in {took}: {result['sizes']}", flush=True)
        result["load"]["filled"] = load()
        result["history"] = measure_all(settings, url, dags, env, work, "history", args.n)
        half = _end_of(runs // 2, runs, newest - dt.timedelta(hours=1))
        result["load"]["before clean"] = load()
        result["clean"] = clean_while_running(url, dags, env, work / "clean", half)
        result["load"]["after clean"] = load()
        result["sizes_after_clean"] = table_sizes(url)
    report(result)


def report(result: dict[str, Any]) -> None:
    empty, history = result["empty"], result["history"]
    print(f"\n{result['task_instances']:,} task instances over {result['runs']:,} runs")
    print(f"{'':32} {'empty ms':>9} {'history ms':>10} {'ratio':>6}")
    for name in empty:
        ratio = history[name] / empty[name]
        flag = "" if ratio <= 1.2 else "  over 1.2x"
        print(f"{name:32} {empty[name]:9.1f} {history[name]:10.1f} {ratio:6.2f}{flag}")
    for name, value in result["clean"].items():
        print(f"{name:32} {value}")
    print(f"load (1, 5, 15 min): {result['load']}")
    out = ROOT / "bench" / "results" / "history.json"
    out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    plot(result, ROOT / "docs" / "benchmarks" / "history.png")
    print(f"written {out}")


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(result["empty"])
    ratios = [result["history"][name] / result["empty"][name] for name in names]
    figure, (left, right) = plt.subplots(
        1, 2, figsize=(13, 4), gridspec_kw={"width_ratios": [3, 1]}
    )
    colors = ["tab:green" if ratio <= 1.2 else "tab:red" for ratio in ratios]
    left.barh(names, ratios, color=colors)
    left.axvline(1.2, color="grey", linestyle="--", label="goal: 1.2x")
    left.set_xlabel(f"with {result['task_instances']:,} task instances / empty store (p50)")
    left.invert_yaxis()
    left.legend()
    clean = result["clean"]
    bars = {
        "heartbeat\nbefore": clean["longest heartbeat before clean ms"],
        "heartbeat\nduring": clean["longest heartbeat during clean ms"],
        "chain hop\nbefore": clean["longest chain hop before clean ms"],
        "chain hop\nduring": clean["longest chain hop during clean ms"],
    }
    right.bar(list(bars), list(bars.values()), color=["grey", "tab:blue", "grey", "tab:blue"])
    right.axhline(1000, color="grey", linestyle="--", label="goal: < 1 s")
    right.set_ylabel("longest wait, ms")
    right.set_title(f"db clean of half: {clean['db clean seconds']:.0f} s")
    right.tick_params(axis="x", labelsize=8)
    right.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
