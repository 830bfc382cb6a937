"""Fleet throughput: N noop task instances through Tradewind against N raw Celery noop tasks.

Both run in this one script on the same Redis, each with one worker of 2 prefork processes, so the
ratio is what matters. Also the upstream-success -> downstream-running latency on a chain.

    python bench/fleet_throughput.py [--n 2000] [--chain 200]

Prints a table, writes bench/results/fleet_throughput.json and docs/benchmarks/fleet_throughput.png.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import redis
from sqlalchemy import func, select

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scheduler.dag_sync import sync_dags  # noqa: E402
from state.db import get_engine, session_scope  # noqa: E402
from state.migrate import upgrade  # noqa: E402
from state.models import DagRun, TaskInstance  # noqa: E402
from state.runs import create_run  # noqa: E402

PG_SERVER = "postgresql://postgres@127.0.0.1:5432"
DAG_FILE = """
import os
from tradewind import DAG, task

@task
def noop():
    return None

N = int(os.environ["BENCH_N"])
C = int(os.environ["BENCH_CHAIN"])
with DAG("bench_fanout", max_active_tasks=N):
    for i in range(N):
        noop.override(task_id=f"t{i}")()
with DAG("bench_chain"):
    previous = None
    for i in range(C):
        current = noop.override(task_id=f"c{i}")()
        if previous is not None:
            previous >> current
        previous = current
"""


def start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        argv,
        env=env,
        cwd=ROOT,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def wait_ready(log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if "ready." in log.read_text(errors="replace"):
            return
        time.sleep(0.1)
    raise RuntimeError(f"worker not ready: see {log}")


def worker_argv(app: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        app,
        "worker",
        "--pool",
        "prefork",
        "-c",
        "2",
        "--loglevel",
        "WARNING",
        "--without-gossip",
        "--without-mingle",
        "-E",
    ]


def bench_raw_celery(n: int, broker: str, workdir: Path) -> float:
    client = redis.Redis.from_url(broker)
    client.flushdb()
    env = {**os.environ, "BENCH_BROKER_URL": broker}
    log = workdir / "raw_worker.log"
    worker = start([*worker_argv("bench.raw_celery_app"), "--loglevel", "INFO"], env, log)
    try:
        wait_ready(log)
        sys.path.insert(0, str(ROOT / "bench"))
        os.environ["BENCH_BROKER_URL"] = broker
        import raw_celery_app

        started = time.monotonic()
        with raw_celery_app.app.producer_or_acquire() as producer:
            for _ in range(n):
                raw_celery_app.noop.apply_async(producer=producer)
        while int(client.get(raw_celery_app.COUNTER) or 0) < n:
            time.sleep(0.01)
        return n / (time.monotonic() - started)
    finally:
        stop(worker)
        client.flushdb()


def fleet_env(url: str, broker: str, dags: Path, home: Path, **extra: str) -> dict[str, str]:
    """The environment of a fleet's processes; ``extra`` also goes to this one (the DAG files
    read it when this process syncs them)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRADEWIND_")}
    env.update(
        TRADEWIND_DATABASE_URL=url,
        TRADEWIND_BROKER_URL=broker,
        TRADEWIND_DAGS_FOLDER=str(dags),
        TRADEWIND_HOME=str(home),
        PYTHONPATH=str(ROOT),
        **extra,
    )
    os.environ.update(extra)
    return env


def start_fleet(
    url: str, dags: Path, env: dict[str, str], workdir: Path
) -> tuple[subprocess.Popen[bytes], subprocess.Popen[bytes]]:
    """Migrate and sync the store, then start one worker (``worker.log``) and one scheduler."""
    upgrade(url)
    with session_scope(url) as session:
        sync_dags(session, dags)
    worker = start([*worker_argv("worker"), "--loglevel", "INFO"], env, workdir / "worker.log")
    scheduler = start(
        [sys.executable, "-m", "tradewind.cli", "scheduler"], env, workdir / "scheduler.log"
    )
    return worker, scheduler


@contextmanager
def bench_database(prefix: str) -> Iterator[str]:
    """The URL of a new PostgreSQL database for one run, dropped (connections and all) after."""
    name = f"{prefix}{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{PG_SERVER}/test", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = f"{PG_SERVER}/{name}"
    try:
        yield url
    finally:
        get_engine(url).dispose()
        with psycopg.connect(f"{PG_SERVER}/test", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@contextmanager
def running_fleet(url: str, dags: Path, env: dict[str, str], workdir: Path) -> Iterator[None]:
    """A fleet (``start_fleet``) from its worker's readiness until the block ends."""
    worker, scheduler = start_fleet(url, dags, env, workdir)
    try:
        wait_ready(workdir / "worker.log")
        yield
    finally:
        stop(scheduler)
        stop(worker)


def bench_fleet(n: int, chain: int, broker: str, workdir: Path) -> dict[str, float]:
    dags = workdir / "dags"
    dags.mkdir()
    (dags / "bench.py").write_text(DAG_FILE)
    redis.Redis.from_url(broker).flushdb()
    with bench_database("tw_bench_") as url:
        env = fleet_env(url, broker, dags, workdir / "home", BENCH_N=str(n), BENCH_CHAIN=str(chain))
        with running_fleet(url, dags, env, workdir):
            if os.environ.get("BENCH_PROFILE"):
                profile_workers(workdir)
            fanout = run_and_wait(url, "bench_fanout", n)
            hops = chain_hops(url, chain)
    return {"fleet_tis_per_s": fanout, **hops}


def profile_workers(workdir: Path) -> None:
    """py-spy on the worker's processes for 12 s (raw folded stacks in ``workdir``)."""
    pids = subprocess.run(
        ["pgrep", "-f", "celery -A worker"], capture_output=True, text=True
    ).stdout.split()
    for pid in pids:
        subprocess.Popen(
            ["py-spy", "record", "-p", pid, "-d", "12", "-f", "raw",
             "-o", str(workdir / f"spy-{pid}.txt"), "--nonblocking"]
        )  # fmt: skip


def run_and_wait(url: str, dag_id: str, n: int) -> float:
    started_wall = time.time()
    with session_scope(url) as session:
        create_run(session, dag_id, run_id="bench")
    while True:
        with session_scope(url) as session:
            done = session.scalar(
                select(func.count()).where(
                    TaskInstance.dag_id == dag_id, TaskInstance.state == "success"
                )
            )
            last = session.scalar(
                select(func.max(TaskInstance.end_date)).where(TaskInstance.dag_id == dag_id)
            )
        if done == n:
            return n / (last.timestamp() - started_wall)
        time.sleep(0.2)


def chain_hops(url: str, chain: int) -> dict[str, float]:
    run_and_wait(url, "bench_chain", chain)
    with session_scope(url) as session:
        rows = {
            ti.task_id: ti
            for ti in session.scalars(
                select(TaskInstance).where(TaskInstance.dag_id == "bench_chain")
            )
        }
        session.scalars(select(DagRun)).all()
    hops = [
        (rows[f"c{i}"].start_date - rows[f"c{i - 1}"].end_date).total_seconds() * 1000
        for i in range(1, chain)
    ]
    hops.sort()
    return {
        "chain_hop_p50_ms": statistics.median(hops),
        "chain_hop_p99_ms": hops[min(len(hops) - 1, int(len(hops) * 0.99))],
        "chain_hop_max_ms": hops[-1],
    }


def plot(result: dict[str, float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    left.bar(
        ["raw Celery", "Tradewind"],
        [result["raw_celery_per_s"], result["fleet_tis_per_s"]],
        color=["grey", "tab:blue"],
    )
    left.set_title(f"{result['n']} noop tasks, 1 worker -c 2 (per s)")
    right.bar(
        ["p50", "p99"], [result["chain_hop_p50_ms"], result["chain_hop_p99_ms"]], color="tab:orange"
    )
    right.set_title(f"chain of {result['chain']}: hop latency (ms)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--chain", type=int, default=200)
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/14")
    parser.add_argument("--keep", action="store_true", help="keep the logs (printed folder)")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="tw-bench-"))
    try:
        raw = bench_raw_celery(args.n, args.broker, workdir)
        fleet = bench_fleet(args.n, args.chain, args.broker, workdir)
    finally:
        if args.keep:
            print(f"logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    result = {
        "n": args.n,
        "chain": args.chain,
        "raw_celery_per_s": raw,
        **fleet,
        "ratio": fleet["fleet_tis_per_s"] / raw,
    }
    print(f"{'measure':<34}{'value':>12}")
    for key, value in result.items():
        print(f"{key:<34}{value:>12.2f}" if isinstance(value, float) else f"{key:<34}{value:>12}")
    (ROOT / "bench" / "results" / "fleet_throughput.json").write_text(
        json.dumps(result, indent=2) + "\n"
    )
    plot(result, ROOT / "docs" / "benchmarks" / "fleet_throughput.png")


if __name__ == "__main__":
    main()
