"""Fleet throughput: N noop task instances through Tradewind against N raw Celery noop tasks.

Both run in this one script on the same Redis, each with one worker of concurrency 2, so the
ratio is what matters. Also the upstream-success -> downstream-running latency on a chain.

    python bench/fleet_throughput.py [--n 2000] [--chain 200] [--modes fresh,warm]
        [--pools threads,prefork]

Raw Celery runs on prefork (its own default), Tradewind on each pool of ``--pools`` (threads, the
worker's default: its supervisors are threads of the Celery main process; prefork: one pool
process per slot), each pool in each mode on a fleet of its own, in the order given.

Each mode (fresh: a task process per try; warm: TRADEWIND_TASK_PROCESS_REUSE=1000) runs the
fan-out three times on one fleet: unwatched, watched by ``dags trigger --wait`` on a pty, and
unwatched again; the CPU per task instance of each kind of process (from /proc, over the first)
and the peak PSS of the worker's process tree are printed beside the rates.

Prints a table, writes bench/results/fleet_throughput.json and docs/benchmarks/fleet_throughput.png.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TextIO

import psycopg
import redis
from sqlalchemy import func, select

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "bench"))  # after the root: bench/scheduler.py is no package

from process_cpu import (  # noqa: E402
    ROLES,
    Fleet,
    PeakPss,
    Snapshot,
    children_by_parent,
    cpu_ms_by_role,
    descendants,
)

from scheduler.dag_sync import sync_dags  # noqa: E402
from state.core.db import get_engine, session_scope  # noqa: E402
from state.core.migrate import upgrade  # noqa: E402
from state.core.models import DagRun, TaskInstance  # noqa: E402
from state.engine.runs import create_run  # noqa: E402

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


_LOCKS: list[TextIO] = []


def own_broker() -> str:
    """A Redis database number of this run's own: locked as the integration tests lock theirs
    (tests/integration/conftest.py), so neither flushes the other's queue on the shared server."""
    for number in range(15, 0, -1):
        lock = open(f"/tmp/tradewind-test-redis-db-{number}.lock", "w")  # noqa: SIM115
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        _LOCKS.append(lock)  # held until this process exits
        return f"redis://127.0.0.1:6379/{number}"
    raise RuntimeError("no free Redis database number (1-15) for the benchmark")


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


def worker_argv(app: str, pool: str = "prefork") -> list[str]:
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        app,
        "worker",
        "--pool",
        pool,
        "-c",
        "2",
        "--loglevel",
        "WARNING",
        "--without-gossip",
        "--without-mingle",
        "-E",
    ]


def bench_raw_celery(n: int, broker: str, workdir: Path) -> float:
    return bench_raw_celery_cpu(n, broker, workdir)["raw_celery_per_s"]


def bench_raw_celery_cpu(n: int, broker: str, workdir: Path) -> dict[str, float]:
    """Raw Celery's rate on ``n`` noop tasks, and its CPU per task in each of its processes."""
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

        fleet = Fleet(worker.pid, redis_pid=redis_pid(broker))
        before = Snapshot.take(fleet)
        started = time.monotonic()
        with raw_celery_app.app.producer_or_acquire() as producer:
            for _ in range(n):
                raw_celery_app.noop.apply_async(producer=producer)
        while int(client.get(raw_celery_app.COUNTER) or 0) < n:
            time.sleep(0.01)
        rate = n / (time.monotonic() - started)
        spent = cpu_ms_by_role(before, Snapshot.take(fleet))
    finally:
        stop(worker)
        client.flushdb()
    roles = ("celery main", "pool processes", "redis")
    return {"raw_celery_per_s": rate, **{f"raw cpu_ms {role}": spent[role] / n for role in roles}}


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
    url: str, dags: Path, env: dict[str, str], workdir: Path, pool: str = "threads"
) -> tuple[subprocess.Popen[bytes], subprocess.Popen[bytes]]:
    """Migrate and sync the store, then start one worker (``worker.log``) and one scheduler."""
    upgrade(url)
    with session_scope(url) as session:
        sync_dags(session, dags)
    argv = [*worker_argv("worker", pool), "--loglevel", "INFO"]
    worker = start(argv, env, workdir / "worker.log")
    scheduler = start([sys.executable, "-m", "cli", "scheduler"], env, workdir / "scheduler.log")
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
def running_fleet(
    url: str, dags: Path, env: dict[str, str], workdir: Path, pool: str = "threads"
) -> Iterator[tuple[subprocess.Popen[bytes], subprocess.Popen[bytes]]]:
    """A fleet (``start_fleet``) from its worker's readiness until the block ends: its worker
    and its scheduler."""
    worker, scheduler = start_fleet(url, dags, env, workdir, pool)
    try:
        wait_ready(workdir / "worker.log")
        yield worker, scheduler
    finally:
        stop(scheduler)
        stop(worker)


@contextmanager
def bench_fleet_running(
    n: int,
    chain: int,
    broker: str,
    workdir: Path,
    reuse: int = 1,
    pool: str = "threads",
    worker_path: Path | None = None,
) -> Iterator[tuple[str, Fleet, dict[str, str]]]:
    """A fleet over the benchmark's DAGs on a database of its own: the database's URL, the
    fleet's processes, their environment. ``worker_path``: put first on the fleet's PYTHONPATH."""
    dags = workdir / "dags"
    dags.mkdir()
    (dags / "bench.py").write_text(DAG_FILE)
    redis.Redis.from_url(broker).flushdb()
    with bench_database("tw_bench_") as url:
        env = fleet_env(
            url,
            broker,
            dags,
            workdir / "home",
            BENCH_N=str(n),
            BENCH_CHAIN=str(chain),
            TRADEWIND_TASK_PROCESS_REUSE=str(reuse),
        )
        if worker_path is not None:
            env["PYTHONPATH"] = f"{worker_path}:{env['PYTHONPATH']}"
        with running_fleet(url, dags, env, workdir, pool) as (worker, scheduler):
            if os.environ.get("BENCH_PROFILE"):
                profile_workers(workdir, worker.pid)
            yield (
                url,
                Fleet(worker.pid, scheduler.pid, lambda: backend_pids(url), redis_pid(broker)),
                env,
            )


def bench_fleet(
    n: int,
    chain: int,
    broker: str,
    workdir: Path,
    reuse: int = 1,
    watch: bool = False,
    pool: str = "threads",
) -> dict[str, float]:
    """The fan-out of ``n`` (CPU by process over it, the worker tree's peak PSS), with ``watch``
    the same fan-out watched by ``dags trigger --wait`` and once more unwatched, then the chain.

    ``reuse``: TRADEWIND_TASK_PROCESS_REUSE of the worker; ``pool``: its ``--pool``.
    """
    with bench_fleet_running(n, chain, broker, workdir, reuse, pool) as (url, fleet, env):
        pss = PeakPss(fleet)
        try:
            result = fan_out(url, n, fleet)
            if watch:
                result.update(watched_fan_out(url, n, env, fleet, workdir))
            hops = chain_hops(url, chain)
        finally:
            pss.stop()
    at_peak = {f"pss_mb {role}": mb for role, mb in pss.at_peak.items()}
    return {
        **result,
        **hops,
        "peak_pss_mb": pss.peak_mb,
        "pss_processes": pss.processes_at_peak,
        **at_peak,
    }


def fan_out(url: str, n: int, fleet: Fleet, run_id: str = "bench") -> dict[str, float]:
    """One run of the fan-out: its rate, and the CPU per task instance of each kind of process."""
    before = Snapshot.take(fleet)
    with session_scope(url) as session:
        create_run(session, "bench_fanout", run_id=run_id)
    rate = run_and_wait(url, "bench_fanout", n, run_id)
    spent = cpu_ms_by_role(before, Snapshot.take(fleet))
    return {"fleet_tis_per_s": rate, **{f"cpu_ms {role}": ms / n for role, ms in spent.items()}}


def watched_fan_out(
    url: str, n: int, env: dict[str, str], fleet: Fleet, workdir: Path
) -> dict[str, float]:
    """The fan-out triggered with ``dags trigger --wait`` on a terminal (a pty, drained), then
    once more unwatched: the watch's cost is its rate against the mean of the two unwatched."""
    primary, secondary = pty.openpty()
    threading.Thread(target=_drain, args=(primary,), daemon=True).start()
    argv = [sys.executable, "-m", "cli", "dags", "trigger", "bench_fanout"]
    watcher = subprocess.Popen(
        [*argv, "--run-id", "watched", "--wait"],
        env={**env, "COLUMNS": "120"},
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=secondary,
        stderr=(workdir / "watcher.log").open("wb"),
    )
    os.close(secondary)
    fleet.watcher = watcher.pid
    while not _run_exists(url, "watched"):
        time.sleep(0.05)
    before = Snapshot.take(fleet)
    watched = run_and_wait(url, "bench_fanout", n, "watched")
    spent = cpu_ms_by_role(before, Snapshot.take(fleet))
    watcher.wait(60)
    fleet.watcher = None
    again = fan_out(url, n, fleet, run_id="bench-again")["fleet_tis_per_s"]
    return {
        "watched_tis_per_s": watched,
        "unwatched_again_tis_per_s": again,
        "watcher_cpu_ms_per_ti": spent["watcher"] / n,
    }


def _drain(fd: int) -> None:
    with suppress(OSError):
        while os.read(fd, 65536):
            pass


def _run_exists(url: str, run_id: str) -> bool:
    with session_scope(url) as session:
        return session.scalar(select(DagRun.id).where(DagRun.run_id == run_id)) is not None


def backend_pids(url: str) -> list[int]:
    """The PostgreSQL backends serving this run's database (the server is shared)."""
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(f"{PG_SERVER}/test", autocommit=True) as admin:
        rows = admin.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", (name,))
        return [int(row[0]) for row in rows]


def redis_pid(broker: str) -> int:
    info = redis.Redis.from_url(broker).info("server")
    return int(info["process_id"])


def profile_workers(workdir: Path, worker: int) -> None:
    """py-spy on this fleet's worker processes for 12 s (raw folded stacks in ``workdir``)."""
    for pid in descendants(worker, children_by_parent()):
        subprocess.Popen(
            ["py-spy", "record", "-p", str(pid), "-d", "12", "-f", "raw",
             "-o", str(workdir / f"spy-{pid}.txt"), "--nonblocking"]
        )  # fmt: skip


def run_and_wait(url: str, dag_id: str, n: int, run_id: str = "bench") -> float:
    """Wait for the ``n`` task instances of the run to succeed; their rate, from the run's
    creation to the last one's end."""
    where = (TaskInstance.dag_id == dag_id, TaskInstance.run_id == run_id)
    while True:
        with session_scope(url) as session:
            done = session.scalar(
                select(func.count()).where(*where, TaskInstance.state == "success")
            )
            last = session.scalar(select(func.max(TaskInstance.end_date)).where(*where))
            created = session.scalar(
                select(DagRun.created_at).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id)
            )
        if done == n:
            return n / (last.timestamp() - created.timestamp())
        time.sleep(0.2)


def chain_hops(url: str, chain: int) -> dict[str, float]:
    with session_scope(url) as session:
        create_run(session, "bench_chain", run_id="bench")
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


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = fleet_columns(result)
    figure, (left, middle, right) = plt.subplots(1, 3, figsize=(15, 3.8))
    before = result["raw_celery_per_s"]
    raw = (before + result.get("raw_celery_after_per_s", before)) / 2
    left.bar(
        ["raw Celery\n(before, after)", *columns],
        [raw, *(result[f"{column} fleet_tis_per_s"] for column in columns)],
        color=["grey", *["tab:blue", "tab:green", "tab:cyan", "tab:olive"][: len(columns)]],
    )
    left.set_title(f"{result['n']} noop tasks, 1 worker -c 2 (per s)")
    left.tick_params(axis="x", labelsize=7)
    bottom = [0.0] * len(columns)
    for role in ROLES:
        heights = [result.get(f"{column} cpu_ms {role}", 0.0) for column in columns]
        middle.bar(columns, heights, bottom=bottom, label=role)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    middle.set_title("CPU per task instance, by process (ms)")
    middle.tick_params(axis="x", labelsize=7)
    middle.legend(fontsize=7)
    right.bar(
        [f"{column}\np{q}" for column in columns for q in (50, 99)],
        [result[f"{column} chain_hop_p{q}_ms"] for column in columns for q in (50, 99)],
        color="tab:orange",
    )
    right.set_title(f"chain of {result['chain']}: hop latency (ms)")
    right.tick_params(axis="x", labelsize=6)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


MODES = {"fresh": 1, "warm": 1000}
POOLS = ("threads", "prefork")


def fleet_columns(result: dict[str, Any]) -> list[str]:
    """The fleets measured, as "<pool> <mode>", in the order they ran."""
    return [str(column) for column in result.get("columns", [])]


def print_table(result: dict[str, Any]) -> None:
    columns = fleet_columns(result)
    print(f"{'measure':<32}" + "".join(f"{column:>16}" for column in columns))
    keys = [key[len(columns[0]) + 1 :] for key in result if key.startswith(f"{columns[0]} ")]
    for key in keys:
        row = [result.get(f"{column} {key}") for column in columns]
        print(f"{key:<32}" + "".join(f"{value:>16.2f}" for value in row if value is not None))
    print()
    for key, value in result.items():
        if key != "columns" and not key.startswith(tuple(f"{column} " for column in columns)):
            print(
                f"{key:<40}{value:>12.2f}" if isinstance(value, float) else f"{key:<40}{value:>12}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--chain", type=int, default=200)
    parser.add_argument("--broker", help="default: a Redis database number locked for the run")
    parser.add_argument("--modes", default="fresh,warm", help="fresh (reuse 1), warm (1000)")
    parser.add_argument("--pools", default="threads", help="the worker's --pool: threads, prefork")
    parser.add_argument("--keep", action="store_true", help="keep the logs (printed folder)")
    args = parser.parse_args()
    pools, modes = args.pools.split(","), args.modes.split(",")
    for pool in pools:
        if pool not in POOLS:
            parser.error(f"--pools: {pool!r} is not one of {', '.join(POOLS)}")
    for mode in modes:
        if mode not in MODES:
            parser.error(f"--modes: {mode!r} is not one of {', '.join(MODES)}")
    args.broker = args.broker or own_broker()
    workdir = Path(tempfile.mkdtemp(prefix="tw-bench-"))
    result: dict[str, Any] = {"n": args.n, "chain": args.chain, "columns": []}
    try:
        result.update(bench_raw_celery_cpu(args.n, args.broker, workdir))
        result["raw cpu_ms all"] = sum(v for k, v in result.items() if k.startswith("raw cpu_ms"))
        # Mode by mode, the pools one after the other: a shared machine's load falls on both.
        for mode in modes:
            for pool in pools:
                folder = workdir / f"{pool}-{mode}"
                folder.mkdir()
                fleet = bench_fleet(
                    args.n, args.chain, args.broker, folder, MODES[mode], watch=True, pool=pool
                )
                unwatched = (fleet["fleet_tis_per_s"] + fleet["unwatched_again_tis_per_s"]) / 2
                fleet["watch_slowdown_pct"] = 100 * (1 - fleet["watched_tis_per_s"] / unwatched)
                fleet["cpu_ms all"] = sum(v for k, v in fleet.items() if k.startswith("cpu_ms"))
                result.update({f"{pool} {mode} {key}": value for key, value in fleet.items()})
                result["columns"].append(f"{pool} {mode}")
        # Raw Celery once more: this machine's speed drifts by a third over minutes, and the
        # ratios are taken against the mean of the two runs around the fleets.
        after = bench_raw_celery_cpu(args.n, args.broker, workdir)["raw_celery_per_s"]
        result["raw_celery_after_per_s"] = after
        raw = (result["raw_celery_per_s"] + after) / 2
        for column in result["columns"]:
            result[f"{column} ratio"] = result[f"{column} fleet_tis_per_s"] / raw
    finally:
        if args.keep:
            print(f"logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print_table(result)
    (ROOT / "bench" / "results" / "fleet_throughput.json").write_text(
        json.dumps(result, indent=2) + "\n"
    )
    plot(result, ROOT / "docs" / "benchmarks" / "fleet_throughput.png")


if __name__ == "__main__":
    main()
