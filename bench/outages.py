"""Outages: what a Redis or PostgreSQL outage of 1, 3, 10 and 60 s costs a running DAG run.

Each scenario starts its own Redis (AOF on) and its own PostgreSQL on free ports, a worker
(2 prefork processes) and a scheduler with the default settings (heartbeat 5 s, zombie after
30 s), and runs the outage DAG: two tries sleeping side by side, then one after them. One second
after both sleepers started, the service goes away (Redis: SIGKILL; PostgreSQL: ``pg_ctl stop -m
immediate``) for the outage's length, then comes back (Redis on its AOF). The sleepers end in
the middle of the outage, so their ends, and the message of the task after them, all meet it.
The tasks have ``retries=1`` and sleep on their first try only: a try given up is retried at
once, and counted.

    python bench/outages.py [--lengths 1,3,10,60] [--zombie-threshold 30]

Prints a table (tries consumed; seconds from the service's return to the run's end) and writes
bench/results/outages.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import select  # noqa: E402

from state.core.db import get_engine, session_scope  # noqa: E402
from state.core.models import DagRun  # noqa: E402
from tests.integration.conftest import Fleet  # noqa: E402
from tests.integration.test_outages_servers import (  # noqa: E402
    PostgresServer,
    RedisServer,
    bodies_run,
    outage_fleet,
    wait_run_through_outage,
)

#: The outage DAG's sleepers, on their first try only (a retry runs at once).
BENCH_DAG = """
import os
import time

from tradewind import dag, get_current_context, task


def _record():
    ti = get_current_context()["ti"]
    line = f"{ti.run_id} {ti.task_id} {ti.try_number}\\n"
    fd = os.open(os.environ["OUTAGE_RECORD"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    return ti.try_number


@task(retries=1, retry_delay=0)
def sleeper():
    if _record() == 1:
        time.sleep(float(os.environ["OUTAGE_SLEEP_SECONDS"]))
    return "slept"


@task(retries=1, retry_delay=0)
def after(left, right):
    _record()
    return f"{left}+{right}"


@dag(dag_id="outage")
def outage():
    after(sleeper.override(task_id="left")(), sleeper.override(task_id="right")())


outage()
"""

#: Tradewind's defaults, instead of the integration tests' short ones.
DEFAULTS = {
    "TRADEWIND_HEARTBEAT_SECONDS": "5",
    "TRADEWIND_TASK_QUEUED_TIMEOUT_SECONDS": "60",
    "TRADEWIND_SCHEDULER_INTERVAL_SECONDS": "1",
    "TRADEWIND_KILL_GRACE_SECONDS": "5",
}


def scenario(service: str, seconds: float, zombie: float, workdir: Path) -> dict[str, Any]:
    redis = RedisServer(workdir / "redis")
    redis.folder.mkdir(parents=True)
    redis.start()
    pg_folder = Path(tempfile.mkdtemp(prefix="tradewind-bench-pg-"))
    pg = PostgresServer(pg_folder / "cluster")
    pg.init()
    pg.start()
    sleep = 1 + seconds / 2  # the sleepers end in the middle of the outage
    fleet = outage_fleet(workdir / "home", pg.url, redis.url, sleep, dag_source=BENCH_DAG)
    fleet.env.update(DEFAULTS, TRADEWIND_ZOMBIE_THRESHOLD_SECONDS=str(zombie))
    try:
        return _measure(fleet, service, seconds, redis, pg)
    finally:
        fleet.stop()
        get_engine(pg.url).dispose()
        redis.stop()
        pg.stop_if_running()
        shutil.rmtree(pg_folder, ignore_errors=True)


def _measure(
    fleet: Fleet, service: str, seconds: float, redis: RedisServer, pg: PostgresServer
) -> dict[str, Any]:
    record = Path(fleet.env["OUTAGE_RECORD"])
    fleet.start_worker("w1", concurrency=2)
    fleet.start_scheduler()
    fleet.wait_for(lambda: " ready." in fleet.log("w1"), 60, "the worker")
    fleet.trigger("outage", "r1")
    fleet.wait_for(lambda: len(bodies_run(record)) == 2, 60, "both sleepers")
    time.sleep(1)  # Redis's AOF (fsync every second) holds the deliveries by now
    get_engine(fleet.url).dispose()
    redis.kill() if service == "redis" else pg.stop()
    time.sleep(seconds)
    redis.start() if service == "redis" else pg.start()
    back = time.time()
    state = wait_run_through_outage(fleet, "outage", "r1", timeout=seconds + 180)
    with session_scope(fleet.url) as session:
        run = session.scalars(select(DagRun).filter_by(dag_id="outage", run_id="r1")).one()
        ended = run.end_date
    tis = fleet.task_instances("outage", "r1")
    tries = {tid: ti.try_number for tid, ti in tis.items()}
    after_started = tis["after"].start_date
    bodies = bodies_run(record)
    return {
        "service": service,
        "outage_seconds": seconds,
        "run": state,
        "tries_consumed": sum(n - 1 for n in tries.values()),
        "bodies_run": len(bodies),
        # The run moving again: the task after the sleepers started (the run's end waits for
        # that task, then for the scheduler's next loop, which marks the run).
        "seconds_from_return_to_next_task": _since(back, after_started),
        "seconds_from_return_to_end": _since(back, ended),
        "processes_alive": all(process.poll() is None for process, _ in fleet.processes),
    }


def _since(back: float, moment: dt.datetime | None) -> float | None:
    if moment is None:
        return None
    if moment.tzinfo is None:  # stored in UTC
        moment = moment.replace(tzinfo=dt.UTC)
    return round(moment.timestamp() - back, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="1,3,10,60")
    parser.add_argument("--zombie-threshold", type=float, default=30.0)
    args = parser.parse_args()
    lengths = [float(n) for n in args.lengths.split(",")]
    results = []
    for service in ("redis", "postgresql"):
        for seconds in lengths:
            with tempfile.TemporaryDirectory(prefix="tradewind-bench-outage-") as workdir:
                result = scenario(service, seconds, args.zombie_threshold, Path(workdir))
            results.append(result)
            print(_row(result), flush=True)
    out = ROOT / "bench" / "results" / "outages.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps({"zombie_threshold": args.zombie_threshold, "runs": results}, indent=2)
    )
    print(f"\nzombie threshold {args.zombie_threshold:g}s; wrote {out.relative_to(ROOT)}")


def _row(result: dict[str, Any]) -> str:
    return (
        f"{result['service']:<10} {result['outage_seconds']:>4g}s  run {result['run']:<7}  "
        f"tries consumed {result['tries_consumed']}  bodies run {result['bodies_run']}  "
        f"return -> next task {result['seconds_from_return_to_next_task']}s, "
        f"-> run end {result['seconds_from_return_to_end']}s  "
        f"processes alive {result['processes_alive']}"
    )


if __name__ == "__main__":
    main()
