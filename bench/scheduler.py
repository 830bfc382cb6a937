"""The scheduler at scale: cost of a scheduling pass, chain latency, throughput per scheduler count.

    python bench/scheduler.py [--sizes 10,100,1000,5000] [--chain 200] [--runs 60] [--quick]

1. One scheduling pass over one DAG run of 10 / 100 / 1,000 / 5,000 tasks on PostgreSQL: SQL
   statements (counted with SQLAlchemy's ``before_cursor_execute``) and wall time, for a run's
   first pass (every task ready: all of them scheduled and queued) and for a pass half-way
   through (successes, failures, due retries and running tries side by side).
2. Upstream success -> downstream running on a 200-task chain of noop tasks, through a real
   fleet (one scheduler, one Celery worker with two prefork processes, PostgreSQL, Redis): the
   downstream task instance's start (its claim) minus the upstream one's end (its final write).
3. Task instances per second scheduled to completion by 1, 2 and 3 scheduler processes, with the
   execution itself taken out: a stand-in worker process ends every queued try at once in SQL,
   so what is measured is the schedulers (and their locks), not Celery.

Prints a table and writes bench/results/scheduler.json. Figures from a loaded 2-core machine
are noisy: compare rows of one run, not runs.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import redis
from sqlalchemy import event, func, select, update

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from fleet_throughput import fleet_env  # noqa: E402

from scheduler.dag_sync import sync_dags  # noqa: E402
from state.core.db import get_engine, session_scope  # noqa: E402
from state.core.enums import TaskInstanceState  # noqa: E402
from state.core.migrate import upgrade  # noqa: E402
from state.core.models import DEFAULT_POOL, DagRun, TaskInstance, utcnow  # noqa: E402
from state.core.transitions import transition_tis  # noqa: E402
from state.engine.pools import set_pool  # noqa: E402
from state.engine.runs import create_run  # noqa: E402
from state.engine.scheduling import schedule_run_by_pk  # noqa: E402

PG_SERVER = "postgresql://postgres@127.0.0.1:5432"
REDIS = "redis://127.0.0.1:6379"
TI = TaskInstanceState

DAG_FILE = """
import os
from tradewind import DAG, task

@task
def noop():
    return None

SIZES = [int(n) for n in os.environ.get("BENCH_SIZES", "10").split(",")]
CHAIN = int(os.environ.get("BENCH_CHAIN", "200"))

for n in SIZES:
    with DAG(f"wide_{n}", max_active_tasks=100_000, max_active_runs=1000):
        for i in range(n):
            noop.override(task_id=f"t{i}")()
    with DAG(f"half_{n}", max_active_tasks=100_000, max_active_runs=1000):
        for i in range(n // 2):
            noop.override(task_id=f"r{i}")() >> noop.override(task_id=f"c{i}")()

with DAG("chain"):
    previous = None
    for i in range(CHAIN):
        current = noop.override(task_id=f"c{i}")()
        if previous is not None:
            previous >> current
        previous = current

with DAG("fan20", max_active_tasks=100_000, max_active_runs=1000):
    first, middle, last = (noop.override(task_id=name)() for name in ("start", "middle", "end"))
    for n in range(9):
        first >> noop.override(task_id=f"a{n}")() >> middle
    for n in range(8):
        middle >> noop.override(task_id=f"b{n}")() >> last
"""


# --- infrastructure ------------------------------------------------------------------------


@contextlib.contextmanager
def database() -> Iterator[str]:
    name = f"tw_bench_sched_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{PG_SERVER}/test", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = f"{PG_SERVER}/{name}"
    try:
        upgrade(url)
        yield url
    finally:
        get_engine(url).dispose()
        with psycopg.connect(f"{PG_SERVER}/test", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@contextlib.contextmanager
def redis_database() -> Iterator[str]:
    """A Redis database number nobody else uses meanwhile (the tests' lock files), flushed."""
    for number in range(1, 16):
        lock = open(f"/tmp/tradewind-test-redis-db-{number}.lock", "w")  # noqa: SIM115
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        url = f"{REDIS}/{number}"
        redis.Redis.from_url(url).flushdb()
        try:
            yield url
        finally:
            redis.Redis.from_url(url).flushdb()
            lock.close()
        return
    raise RuntimeError("no free Redis database number")


def prepare(url: str, dags: Path) -> None:
    with session_scope(url) as session:
        sync_dags(session, dags)
        set_pool(session, DEFAULT_POOL, 1_000_000)


def start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    out = log.open("wb")
    return subprocess.Popen(
        argv, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )


def stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# --- 1. one scheduling pass -----------------------------------------------------------------


def count_statements(url: str, action: Callable[[], Any]) -> tuple[int, float]:
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    engine = get_engine(url)
    event.listen(engine, "before_cursor_execute", record)
    try:
        started = time.perf_counter()
        action()
        elapsed = time.perf_counter() - started
    finally:
        event.remove(engine, "before_cursor_execute", record)
    return len(statements), elapsed


def one_pass(url: str, run_pk: int) -> int:
    with session_scope(url) as session:
        return len(schedule_run_by_pk(session, run_pk))


def half_way(url: str, run_pk: int) -> None:
    """Roots in turn succeeded, failed, waiting for a due retry, and still running."""
    states = [TI.SUCCESS, TI.FAILED, TI.UP_FOR_RETRY, TI.RUNNING]
    with session_scope(url) as session:
        run = session.get_one(DagRun, run_pk)
        roots = session.scalars(
            select(TaskInstance.id)
            .where(
                TaskInstance.dag_id == run.dag_id,
                TaskInstance.run_id == run.run_id,
                TaskInstance.task_id.like("r%"),
            )
            .order_by(TaskInstance.id)
        ).all()
        session.execute(update(DagRun).where(DagRun.id == run_pk).values(state="running"))
        for k, state in enumerate(states):
            session.execute(
                update(TaskInstance)
                .where(TaskInstance.id.in_(roots[k :: len(states)]))
                .values(state=state, try_number=1, next_retry_at=utcnow())
            )


def bench_pass(url: str, sizes: list[int], repeats: int) -> list[dict[str, Any]]:
    rows = []
    for n in sizes:
        for shape in ("first", "half-way"):
            dag_id = f"wide_{n}" if shape == "first" else f"half_{n}"
            statements, seconds, moved = [], [], 0
            for k in range(repeats):
                with session_scope(url) as session:
                    run_pk = create_run(session, dag_id, run_id=f"{shape}-{k}").id
                if shape == "half-way":
                    half_way(url, run_pk)
                count, elapsed = count_statements(url, lambda pk=run_pk: one_pass(url, pk))
                statements.append(count)
                seconds.append(elapsed)
                with session_scope(url) as session:
                    moved = session.scalar(
                        select(func.count()).where(
                            TaskInstance.run_id == f"{shape}-{k}",
                            TaskInstance.dag_id == dag_id,
                            TaskInstance.state == TI.QUEUED,
                        )
                    )
            rows.append(
                {
                    "tasks": n,
                    "pass": shape,
                    "statements": max(statements),
                    "ms_median": statistics.median(seconds) * 1000,
                    "queued": moved,
                }
            )
            print(f"  pass over {n:>5} tasks ({shape}): {rows[-1]}", flush=True)
    return rows


# --- 2. chain latency -------------------------------------------------------------------------


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.1)


def bench_chain(url: str, dags: Path, workdir: Path, length: int) -> dict[str, float]:
    with redis_database() as broker:
        env = fleet_env(url, broker, dags, workdir / "home")
        log = workdir / "worker.log"
        worker = start(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "worker",
                "worker",
                "--pool",
                "prefork",
                "-c",
                "2",
                "--loglevel",
                "INFO",
                "--without-gossip",
                "--without-mingle",
            ],
            env,
            log,
        )
        scheduler = start([sys.executable, "-m", "cli", "scheduler"], env, workdir / "sched.log")
        try:
            wait_for(lambda: "ready." in log.read_text(errors="replace"), 60, "the worker")
            with session_scope(url) as session:
                run_pk = create_run(session, "chain", run_id="chain").id
            wait_for(lambda: run_state(url, run_pk) in ("success", "failed"), 600, "the chain")
        finally:
            stop(scheduler)
            stop(worker)
    with session_scope(url) as session:
        tis = {
            ti.task_id: (ti.start_date, ti.end_date)
            for ti in session.scalars(select(TaskInstance).where(TaskInstance.dag_id == "chain"))
        }
    hops = [
        (tis[f"c{i + 1}"][0] - tis[f"c{i}"][1]).total_seconds() * 1000 for i in range(length - 1)
    ]
    return {
        "state": run_state(url, run_pk),
        "hops": len(hops),
        "p50_ms": statistics.median(hops),
        "p99_ms": percentile(hops, 0.99),
        "max_ms": max(hops),
    }


def run_state(url: str, run_pk: int) -> str:
    with session_scope(url) as session:
        return str(session.get_one(DagRun, run_pk).state)


# --- 3. throughput per number of schedulers ----------------------------------------------------

SCHEDULER_ROLE = """
import sys, threading
from pathlib import Path
from types import SimpleNamespace
import scheduler.loop as loop
from scheduler.loop import Scheduler
from tradewind.settings import Settings

loop.publish_many = lambda app, ready: len(ready)  # no broker: the stand-in worker reads SQL
settings = Settings(
    database_url=sys.argv[1], dags_folder=Path(sys.argv[2]), scheduler_interval_seconds=0.05
)
Scheduler(settings, app=SimpleNamespace(main="bench")).run_forever()
"""


def instant_worker(url: str, total: int, deadline: float) -> None:
    """End every queued try at once, as a worker that takes no time would (no downstream pass)."""
    while time.monotonic() < deadline:
        with session_scope(url) as session:
            ids = session.scalars(
                select(TaskInstance.id).where(TaskInstance.state == TI.QUEUED).limit(1000)
            ).all()
            transition_tis(session, ids, [TI.QUEUED], TI.RUNNING)
            transition_tis(session, ids, [TI.RUNNING], TI.SUCCESS, {"end_date": utcnow()})
            done = session.scalar(select(func.count()).where(TaskInstance.state == TI.SUCCESS))
        if done >= total:
            return
        if not ids:
            time.sleep(0.005)
    raise RuntimeError("the schedulers did not finish in time")


def bench_throughput(
    dags: Path, workdir: Path, runs: int, schedulers: list[int]
) -> list[dict[str, Any]]:
    rows = []
    for count in schedulers:
        with database() as url:
            prepare(url, dags)
            processes = [
                start(
                    [sys.executable, "-c", SCHEDULER_ROLE, url, str(dags)],
                    {**os.environ, "PYTHONPATH": str(ROOT)},
                    workdir / f"throughput-{count}-{n}.log",
                )
                for n in range(count)
            ]
            try:
                time.sleep(3)  # let them import and sync before the clock starts
                started = time.monotonic()
                with session_scope(url) as session:
                    for k in range(runs):
                        create_run(session, "fan20", run_id=f"t{k}")
                instant_worker(url, runs * 20, started + 600)
                elapsed = time.monotonic() - started
            finally:
                for process in processes:
                    stop(process)
        rows.append(
            {
                "schedulers": count,
                "task_instances": runs * 20,
                "seconds": elapsed,
                "tis_per_s": runs * 20 / elapsed,
            }
        )
        print(f"  {count} scheduler(s): {rows[-1]}", flush=True)
    return rows


# --- report ------------------------------------------------------------------------------------


def print_table(results: dict[str, Any]) -> None:
    print("\nOne scheduling pass over one run (PostgreSQL)")
    print(f"{'tasks':>6}  {'pass':<9} {'statements':>10}  {'ms (median)':>11}  {'queued':>6}")
    for row in results["pass"]:
        print(
            f"{row['tasks']:>6}  {row['pass']:<9} {row['statements']:>10}  "
            f"{row['ms_median']:>11.1f}  {row['queued']:>6}"
        )
    if results.get("chain"):
        chain = results["chain"]
        print(f"\nChain of {chain['hops'] + 1}: upstream success -> downstream running")
        p50, p99, worst = chain["p50_ms"], chain["p99_ms"], chain["max_ms"]
        print(f"  p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {worst:.1f} ms")
    print("\nThroughput, execution taken out (fan20 runs, a stand-in worker ends tries in SQL)")
    print(f"{'schedulers':>10}  {'TIs':>5}  {'seconds':>7}  {'TIs/s':>7}")
    for row in results["throughput"]:
        print(
            f"{row['schedulers']:>10}  {row['task_instances']:>5}  {row['seconds']:>7.1f}"
            f"  {row['tis_per_s']:>7.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,100,1000,5000")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--chain", type=int, default=200)
    parser.add_argument("--runs", type=int, default=60, help="fan20 runs for the throughput")
    parser.add_argument("--schedulers", default="1,2,3")
    parser.add_argument("--skip-chain", action="store_true")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    os.environ.update(BENCH_SIZES=args.sizes, BENCH_CHAIN=str(args.chain))
    results: dict[str, Any] = {"machine": {"cpus": os.cpu_count(), "load": os.getloadavg()}}
    with tempfile.TemporaryDirectory(prefix="tw-bench-") as tmp:
        workdir = Path(tmp)
        dags = workdir / "dags"
        dags.mkdir()
        (dags / "bench.py").write_text(DAG_FILE)
        with database() as url:
            prepare(url, dags)
            print("1. one scheduling pass", flush=True)
            results["pass"] = bench_pass(url, sizes, args.repeats)
        if not args.skip_chain:
            # A database of its own: the runs left queued by part 1 must not reach a worker.
            with database() as url:
                prepare(url, dags)
                print("2. chain latency", flush=True)
                results["chain"] = bench_chain(url, dags, workdir, args.chain)
        print("3. throughput by number of schedulers", flush=True)
        counts = [int(n) for n in args.schedulers.split(",")]
        results["throughput"] = bench_throughput(dags, workdir, args.runs, counts)
    results["machine"]["load_after"] = os.getloadavg()
    print_table(results)
    out = ROOT / "bench" / "results" / "scheduler.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(f"\nwrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
