"""16,194 noop items through the real fleet: one iterable task instance, its retry, and .expand.

    python bench/iterable_fleet.py [--items 16194] [--expand-items 1000] [--broker URL]

One scheduler and one Celery worker (2 prefork processes) on PostgreSQL and Redis, started as
bench/fleet_throughput.py starts them. Two DAGs over the same items:
1. ``noop.iterate(x=items)``, ``task_concurrency=16``, 1% of the items failing their first try:
   the wall time of the first try and of the retry, each from its try log (claim to end);
2. ``noop.expand(x=items)``: one task instance per item; the wall time from the first map
   index's claim to the last one's end. At a few task instances a second on a loaded 2-core
   machine, 16,194 of them take most of an hour: by default the expansion runs over the first
   ``--expand-items`` items and its time is scaled to the full count (said so in the output).
Prints a table and writes bench/results/iterable_fleet.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
import redis
from sqlalchemy import func, select

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from fleet_throughput import fleet_env, start_fleet, stop, wait_ready  # noqa: E402

from state.core.db import get_engine, session_scope  # noqa: E402
from state.core.models import DagRun, TaskInstance  # noqa: E402
from state.engine.runs import create_run  # noqa: E402

PG_SERVER = "postgresql://postgres@127.0.0.1:5432"
DAG_FILE = """
import os
from tradewind import dag, task, get_current_context

N = int(os.environ["BENCH_ITEMS"])
N_EXPAND = int(os.environ["BENCH_EXPAND_ITEMS"])


@task
def items():
    return list(range(N))


@task
def expand_items():
    return list(range(N_EXPAND))


@task(task_concurrency=16, retries=1, retry_delay=0)
def noop_item(x):
    if x % 100 == 0 and get_current_context()["ti"].try_number == 1:
        raise ValueError("1% of the items fail their first try")
    return x


@task
def noop_mapped(x):
    return x


@dag(dag_id="bench_iterate")
def bench_iterate():
    noop_item.iterate(x=items())


@dag(dag_id="bench_expand", max_active_tasks=64)
def bench_expand():
    noop_mapped.expand(x=expand_items())


bench_iterate()
bench_expand()
"""


def wait_run(url: str, dag_id: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with session_scope(url) as session:
            state = session.scalar(select(DagRun.state).where(DagRun.dag_id == dag_id))
        if state in ("success", "failed"):
            return str(state)
        time.sleep(0.2)
    raise TimeoutError(f"{dag_id} did not finish in {timeout:g}s")


def try_seconds(home: Path, try_number: int) -> float:
    """Claim to end of one try of the iterable task, from its log's first and last lines."""
    (path,) = (home / "logs" / "bench_iterate").glob(f"*/noop_item/-1/{try_number}.log")
    stamps = [
        line[1 : line.index("]")] for line in path.read_text().splitlines() if line[:1] == "["
    ]
    first, last = dt.datetime.fromisoformat(stamps[0]), dt.datetime.fromisoformat(stamps[-1])
    return (last - first).total_seconds()


def expand_seconds(url: str) -> tuple[int, float]:
    with session_scope(url) as session:
        count, first, last = session.execute(
            select(
                func.count(), func.min(TaskInstance.start_date), func.max(TaskInstance.end_date)
            ).where(TaskInstance.task_id == "noop_mapped", TaskInstance.state == "success")
        ).one()
    return int(count), (last - first).total_seconds()


def run_fleet(
    items: int, expand_items: int, broker: str, workdir: Path, url: str
) -> dict[str, float]:
    dags = workdir / "dags"
    dags.mkdir()
    (dags / "bench_items.py").write_text(DAG_FILE)
    redis.Redis.from_url(broker).flushdb()
    home = workdir / "home"
    counts = {"BENCH_ITEMS": str(items), "BENCH_EXPAND_ITEMS": str(expand_items)}
    env = fleet_env(url, broker, dags, home, **counts)
    worker, scheduler = start_fleet(url, dags, env, workdir)
    log = workdir / "worker.log"
    try:
        wait_ready(log)
        for dag_id in ("bench_iterate", "bench_expand"):
            with session_scope(url) as session:
                create_run(session, dag_id, run_id="bench")
            assert wait_run(url, dag_id, timeout=1800) == "success", dag_id
        expanded, expand_wall = expand_seconds(url)
        assert expanded == expand_items, expanded
        first, retry = try_seconds(home, 1), try_seconds(home, 2)
    finally:
        stop(scheduler)
        stop(worker)
    return {
        "iterate_first_s": first,
        "iterate_retry_s": retry,
        "expand_items": expand_items,
        "expand_s": expand_wall,
        "expand_s_scaled_to_items": expand_wall * items / expand_items,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=16194)
    parser.add_argument("--expand-items", type=int, default=1000)
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/13")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="tw-bench-items-"))
    name = f"tw_bench_items_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{PG_SERVER}/test", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = f"{PG_SERVER}/{name}"
    try:
        result: dict[str, float] = {"items": args.items}
        result.update(run_fleet(args.items, args.expand_items, args.broker, workdir, url))
    finally:
        get_engine(url).dispose()
        with psycopg.connect(f"{PG_SERVER}/test", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        shutil.rmtree(workdir, ignore_errors=True)
    result["expand_over_iterate"] = result["expand_s_scaled_to_items"] / result["iterate_first_s"]
    for key, value in result.items():
        print(f"{key:<24}{value:>12.2f}")
    out = ROOT / "bench" / "results" / "iterable_fleet.json"
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
