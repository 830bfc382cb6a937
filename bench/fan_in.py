"""Fan-ins through the fleet: a map and its reduce, and plain tasks joined by one, against as many
independent tasks in the same run.

Each shape runs N noop task instances on the fleet of ``bench/fleet_throughput.py`` (PostgreSQL,
Redis, one worker ``-c 2``, one scheduler, the default pool's 128 slots). A fan-in's tasks each
have a downstream task waiting for all of them: what their ends cost beyond an independent
task's is the figure (``docs/decisions/a-successor-takes-the-slot.md``).

    python bench/fan_in.py [--n 2000]

Prints a table and writes bench/results/fan_in.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import redis
from sqlalchemy import func, select

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from fleet_throughput import bench_database, fleet_env, running_fleet  # noqa: E402

from state.core.db import session_scope  # noqa: E402
from state.core.models import DagRun, TaskInstance  # noqa: E402
from state.engine.runs import create_run  # noqa: E402

SHAPES = {
    "independent": """
with DAG("shape", max_active_tasks=N + 2):
    for i in range(N):
        noop.override(task_id=f"t{i}")()
""",
    "map_reduce": """
@task
def items():
    return list(range(N - 2))

@task
def reduce(values):
    return len(values)

with DAG("shape", max_active_tasks=N + 2):
    reduce(noop.expand(x=items()))
""",
    "join": """
with DAG("shape", max_active_tasks=N + 2):
    joined = noop.override(task_id="join")()
    for i in range(N - 1):
        noop.override(task_id=f"t{i}")() >> joined
""",
}

HEADER = """
from tradewind import DAG, task

N = {n}

@task
def noop(x=None):
    return None
"""


def run_shape(shape: str, n: int, broker: str, workdir: Path) -> float:
    """N task instances of ``shape`` through a fresh fleet; per second, trigger to last end."""
    folder = workdir / shape
    dags = folder / "dags"
    dags.mkdir(parents=True)
    (dags / "shape.py").write_text(HEADER.format(n=n) + SHAPES[shape])
    redis.Redis.from_url(broker).flushdb()
    with bench_database("tw_fan_in_") as url:
        env = fleet_env(url, broker, dags, folder / "home")
        with running_fleet(url, dags, env, folder):
            started = time.time()
            with session_scope(url) as session:
                create_run(session, "shape", run_id="bench")
            return n / (_last_end(url) - started)


def _last_end(url: str) -> float:
    while True:
        with session_scope(url) as session:
            state = session.scalar(select(DagRun.state))
            last = session.scalar(select(func.max(TaskInstance.end_date)))
        if state == "failed":
            raise RuntimeError("the run failed")
        if state == "success" and last is not None:
            return last.timestamp()
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/14")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="tw-fan-in-"))
    try:
        rates = {shape: run_shape(shape, args.n, args.broker, workdir) for shape in SHAPES}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result: dict[str, float] = {"n": args.n}
    print(f"{'shape':<14}{'per s':>10}{'seconds':>10}{'ratio':>8}")
    for shape, rate in rates.items():
        ratio = rate / rates["independent"]
        result |= {f"{shape}_per_s": rate, f"{shape}_ratio": ratio}
        print(f"{shape:<14}{rate:>10.1f}{args.n / rate:>10.1f}{ratio:>8.2f}")
    (ROOT / "bench" / "results" / "fan_in.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
