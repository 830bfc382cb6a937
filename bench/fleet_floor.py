"""The floor under the fleet's ratio: raw Celery plus only the steps every try must take.

``bench/fleet_throughput.py`` compares Tradewind with raw Celery. This asks how close any
implementation of DESIGN.md could come on this machine: the same raw Celery baseline, then the
same noop messages through a Celery task that does only what each try must do (claim it in
PostgreSQL, run it in a process of its own, record its end), one step added per level
(``bench/floor_app.py`` says what each adds), then Tradewind itself, all in this one run and on
one worker of 2 prefork processes. Each level's ratio to raw Celery bounds what the fleet can
reach with that much of the design in place.

    python bench/fleet_floor.py [--n 2000]

Prints a table, writes bench/results/fleet_floor.json and docs/benchmarks/fleet_floor.png.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg
import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from fleet_throughput import (  # noqa: E402
    DAG_FILE,
    bench_database,
    bench_fleet,
    bench_raw_celery,
    own_broker,
    start,
    stop,
    wait_ready,
    worker_argv,
)

LEVELS = ("sql", "fork", "authoring", "authoring+reply", "worker", "worker+reply")
#: Tradewind itself: a fresh task process per try, and warm ones (TRADEWIND_TASK_PROCESS_REUSE).
FLEETS = {"tradewind": 1, "tradewind_warm": 1000}
TARGET = 0.4


def bench_level(steps: str, n: int, broker: str, workdir: Path) -> float:
    """N noop tries through ``floor_app`` at ``steps``; tries per second, first send to last end."""
    redis.Redis.from_url(broker).flushdb()
    dag_file = workdir / "dags" / "bench.py"
    dag_file.parent.mkdir(exist_ok=True)
    dag_file.write_text(DAG_FILE)
    log = workdir / f"floor-{steps}.log"
    with bench_database("tw_floor_") as url, psycopg.connect(url, autocommit=True) as db:
        db.execute(
            "CREATE TABLE floor_ti (id int PRIMARY KEY, try_number int, state text,"
            " pid int, start_date timestamptz, end_date timestamptz)"
        )
        db.execute(
            "INSERT INTO floor_ti SELECT g, 1, 'scheduled' FROM generate_series(1, %s) g", (n,)
        )
        env = {
            **os.environ,
            "PYTHONPATH": f"{ROOT}:{ROOT / 'bench'}",
            "BENCH_BROKER_URL": broker,
            "FLOOR_DATABASE_URL": url,
            "FLOOR_STEPS": steps,
            "FLOOR_LOGS": str(workdir / f"logs-{steps}"),
            "FLOOR_DAG_FILE": str(dag_file),
            "BENCH_N": str(n),
            "BENCH_CHAIN": "1",
        }
        worker = start([*worker_argv("floor_app"), "--loglevel", "INFO"], env, log)
        try:
            wait_ready(log)
            return _send_and_wait(db, broker, n)
        finally:
            stop(worker)


def _send_and_wait(db: psycopg.Connection[Any], broker: str, n: int) -> float:
    os.environ["BENCH_BROKER_URL"] = broker
    import floor_app

    started = time.time()
    ids = [row[0] for row in db.execute(_QUEUE_ALL)]
    with floor_app.app.producer_or_acquire() as producer:
        for ti_id in ids:
            floor_app.run_try.apply_async((ti_id, 1), producer=producer)
    while _count_done(db) < n:
        time.sleep(0.05)
    last = db.execute("SELECT extract(epoch FROM max(end_date)) FROM floor_ti").fetchone()
    assert last is not None
    return n / (float(last[0]) - started)


_QUEUE_ALL = "UPDATE floor_ti SET state = 'queued' WHERE state = 'scheduled' RETURNING id"


def _count_done(db: psycopg.Connection[Any]) -> int:
    row = db.execute("SELECT count(*) FROM floor_ti WHERE state = 'success'").fetchone()
    return int(row[0]) if row else 0


def plot(result: dict[str, float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [*LEVELS, *FLEETS]
    ratios = [result[f"{name}_ratio"] for name in names]
    figure, axes = plt.subplots(figsize=(9, 3.5))
    colors = ["grey"] * len(LEVELS) + ["tab:blue", "tab:green"]
    axes.bar(names, ratios, color=colors)
    axes.axhline(TARGET, color="tab:red", linestyle="--", label=f"target {TARGET}")
    axes.set_ylabel("task instances/s ÷ raw Celery tasks/s")
    axes.set_title(f"{result['n']} noop tries, 1 worker -c 2: the floor under each step")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--broker", help="default: a Redis database number locked for the run")
    args = parser.parse_args()
    args.broker = args.broker or own_broker()
    workdir = Path(tempfile.mkdtemp(prefix="tw-floor-"))
    result: dict[str, float] = {"n": args.n}
    try:
        raw = bench_raw_celery(args.n, args.broker, workdir)
        result["raw_celery_per_s"] = raw
        for steps in LEVELS:
            result[f"{steps}_per_s"] = bench_level(steps, args.n, args.broker, workdir)
        for name, reuse in FLEETS.items():
            fleet_dir = workdir / name
            fleet_dir.mkdir()
            fleet = bench_fleet(args.n, 2, args.broker, fleet_dir, reuse)
            result[f"{name}_per_s"] = fleet["fleet_tis_per_s"]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    for name in (*LEVELS, *FLEETS):
        result[f"{name}_ratio"] = result[f"{name}_per_s"] / raw
    # How much of what the floor allows the fleet reaches, with a fresh process per try.
    result["tradewind_of_worker+reply"] = result["tradewind_per_s"] / result["worker+reply_per_s"]
    print(f"{'level':<16}{'per s':>10}{'ratio':>8}")
    print(f"{'raw celery':<16}{raw:>10.1f}{1:>8.2f}")
    for name in (*LEVELS, *FLEETS):
        print(f"{name:<16}{result[f'{name}_per_s']:>10.1f}{result[f'{name}_ratio']:>8.2f}")
    print(f"tradewind ÷ worker+reply: {result['tradewind_of_worker+reply']:.2f}")
    (ROOT / "bench" / "results" / "fleet_floor.json").write_text(
        json.dumps(result, indent=2) + "\n"
    )
    plot(result, ROOT / "docs" / "benchmarks" / "fleet_floor.png")


if __name__ == "__main__":
    main()
