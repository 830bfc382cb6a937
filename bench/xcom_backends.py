"""XCom backends: push and pull of 1 KiB, 1 MiB and 64 MiB values, and the heartbeat meanwhile.

For each backend (SQL on PostgreSQL; object storage on a real S3 API, moto's server on
loopback), each size, and each kind of task (a Python task, which runs the backend in its own
process; a Node.js runtime task, whose XComs go through the supervisor and, for object storage,
the helper process), a task pushes a value and a downstream task pulls it, timing the call
from inside the task. Tries run through the real supervisor (``worker.supervisor.execute.execute``).
A separate process samples every running task instance's heartbeat column, so the worst gap
between two heartbeats of a try is measured as the scheduler would see it.

    python bench/xcom_backends.py [--repeat 3] [--sqlite] [--backend B] [--size S]

Prints a table; writes bench/results/xcom_backends.json.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
from sqlalchemy import select  # noqa: E402

from broker_config import message_of  # noqa: E402
from scheduler.dag_sync import sync_dags  # noqa: E402
from state.core.db import get_engine, session_scope  # noqa: E402
from state.core.migrate import upgrade  # noqa: E402
from state.core.models import DagRun, TaskInstance  # noqa: E402
from state.engine.runs import create_run  # noqa: E402
from state.engine.scheduling import schedule_run_by_pk  # noqa: E402
from state.records.connections import put_connection  # noqa: E402
from tests.worker.xcom_support import running_moto  # noqa: E402
from tradewind.settings import reload_settings  # noqa: E402
from worker.supervisor.execute import execute  # noqa: E402
from worker.supervisor.logs import log_path  # noqa: E402

PG_SERVER = "postgresql://postgres@127.0.0.1:5432"
SIZES = {"1KiB": 1 << 10, "1MiB": 1 << 20, "64MiB": 64 << 20}
HEARTBEAT_SECONDS = 1.0
JS_TASK = ROOT / "bench" / "xcom_runtime_task.js"

DAG_FILE = """
import time
from tradewind import dag, get_current_context, task

SIZE = {size}

@task
def py_push():
    value = "x" * (SIZE - 2)
    ti = get_current_context()["ti"]
    started = time.perf_counter()
    ti.xcom_push("value", value)
    print(f"BENCH push {{time.perf_counter() - started}}")

@task
def py_pull():
    ti = get_current_context()["ti"]
    started = time.perf_counter()
    value = ti.xcom_pull("py_push", key="value")
    print(f"BENCH pull {{time.perf_counter() - started}}")
    assert len(value) == SIZE - 2

@task.runtime(command=["node", {js!r}])
def rt_push(op="push", size=SIZE):
    '''bench/xcom_runtime_task.js'''

@task.runtime(command=["node", {js!r}])
def rt_pull(op="pull", size=SIZE, source="rt_push"):
    '''bench/xcom_runtime_task.js'''

@dag(dag_id="bench_xcom_{label}")
def bench():
    py_push() >> py_pull()
    rt_push() >> rt_pull()

bench()
"""

SAMPLER = """
import sys, time
from sqlalchemy import create_engine, text
engine = create_engine(sys.argv[1])
seen = set()
with engine.connect() as connection:
    while True:
        rows = connection.execute(text(
            "SELECT id, last_heartbeat FROM task_instance WHERE state = 'running'"
        )).all()
        connection.commit()
        for ti_id, beat in rows:
            if (ti_id, beat) not in seen:
                seen.add((ti_id, beat))
                print(ti_id, beat.isoformat(), flush=True)
        time.sleep(0.02)
"""


def fresh_database(use_sqlite: bool, home: Path) -> str:
    if use_sqlite:
        return f"sqlite:///{home / 'tradewind.db'}"
    name = f"tw_bench_xcom_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return f"{PG_SERVER}/{name}"


def configure(home: Path, url: str, backend: dict[str, str]) -> Any:
    for name in [n for n in os.environ if n.startswith("TRADEWIND_")]:
        del os.environ[name]
    os.environ.update(
        TRADEWIND_HOME=str(home),
        TRADEWIND_DATABASE_URL=url,
        TRADEWIND_DAGS_FOLDER=str(home / "dags"),
        TRADEWIND_HEARTBEAT_SECONDS=str(HEARTBEAT_SECONDS),
        **backend,
    )
    return reload_settings()


def run_dag(settings: Any, dag_id: str) -> dict[str, dict[str, Any]]:
    """Run every try of one run of ``dag_id``; the timings and try spans by task id."""
    with session_scope(settings.sql_url) as session:
        run_pk = create_run(session, dag_id).id
    pending = []
    while True:
        with session_scope(settings.sql_url) as session:
            pending += schedule_run_by_pk(session, run_pk)
        if not pending:
            break
        while pending:
            outcome = execute(message_of(pending.pop(0)), settings, pending.extend)
            assert outcome == "success", f"{dag_id}: a try ended {outcome}"
    return collect(settings, run_pk)


def collect(settings: Any, run_pk: int) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    with session_scope(settings.sql_url) as session:
        run = session.get(DagRun, run_pk)
        assert run is not None
        query = select(TaskInstance).filter_by(dag_id=run.dag_id, run_id=run.run_id)
        for ti in session.scalars(query):
            log = log_path(settings.logs_folder, ti.dag_id, ti.run_id, ti.task_id, -1, 1)
            lines = [line for line in log.read_text().splitlines() if "BENCH" in line]
            seconds = float(lines[-1].split()[-1])
            found[ti.task_id] = {
                "seconds": seconds,
                "ti_id": ti.id,
                "start": ti.start_date,
                "end": ti.end_date,
            }
    return found


def worst_gaps(samples: list[str], tries: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Per try: the longest time between two heartbeats (the claim counts as the first)."""
    beats: dict[int, list[dt.datetime]] = {}
    for line in samples:
        ti_id, stamp = line.split()
        beats.setdefault(int(ti_id), []).append(dt.datetime.fromisoformat(stamp))
    gaps = {}
    for task_id, info in tries.items():
        times = sorted({info["start"], *beats.get(info["ti_id"], [])})
        times = [t for t in times if t <= info["end"]] + [info["end"]]
        gaps[task_id] = max((b - a).total_seconds() for a, b in itertools.pairwise(times))
    return gaps


def _sampler_priority() -> None:
    # A starved sampler would miss heartbeats and report gaps the scheduler never saw.
    with contextlib.suppress(PermissionError):
        os.nice(-10)


def measure(settings: Any, home: Path, url: str, label: str, size: int) -> dict[str, Any]:
    dag_id = f"bench_xcom_{label}"
    sampler = subprocess.Popen(
        [sys.executable, "-c", SAMPLER, url.replace("postgresql://", "postgresql+psycopg://")],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=_sampler_priority,
    )
    try:
        tries = run_dag(settings, dag_id)
    finally:
        time.sleep(0.1)
        sampler.terminate()
        samples = sampler.communicate()[0].splitlines()
    gaps = worst_gaps(samples, tries)
    return {
        task_id: {"seconds": info["seconds"], "worst_heartbeat_gap_seconds": gaps[task_id]}
        for task_id, info in tries.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per size up to 1 MiB")
    parser.add_argument("--sqlite", action="store_true", help="SQLite instead of PostgreSQL")
    parser.add_argument("--backend", choices=["sql", "object_storage"], help="only this backend")
    parser.add_argument("--size", choices=list(SIZES), help="only this size")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="tw-bench-xcom-"))
    (home / "dags").mkdir()
    url = fresh_database(args.sqlite, home)
    upgrade(url)
    for label, size in SIZES.items():
        source = DAG_FILE.format(size=size, js=str(JS_TASK), label=label)
        (home / "dags" / f"bench_{label}.py").write_text(source)
    with session_scope(url) as session:
        sync_dags(session, home / "dags")
    results: list[dict[str, Any]] = []
    with running_moto() as moto:
        bucket = moto.new_bucket()
        with session_scope(url) as session:
            put_connection(
                session,
                "bench_s3",
                conn_type="aws",
                login="testing",
                password="testing",
                extra={"endpoint_url": moto.endpoint},
            )
        backends = {
            "sql": {"TRADEWIND_XCOM_BACKEND": "sql"},
            "object_storage": {
                "TRADEWIND_XCOM_BACKEND": "object_storage",
                "TRADEWIND_OBJECT_STORAGE_URL": f"s3://{bucket}/xcoms",
                "TRADEWIND_OBJECT_STORAGE_CONN_ID": "bench_s3",
            },
        }
        for backend, env in backends.items():
            if args.backend not in (None, backend):
                continue
            settings = configure(home, url, env)
            for label, size in SIZES.items():
                if args.size not in (None, label):
                    continue
                repeat = args.repeat if size <= (1 << 20) else 1
                runs = [measure(settings, home, url, label, size) for _ in range(repeat)]
                for kind in ("py", "rt"):
                    row = summarize(backend, label, kind, runs)
                    results.append(row)
                    print_row(row)
    get_engine(url).dispose()
    if not args.sqlite:
        with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
    out = ROOT / "bench" / "results" / "xcom_backends.json"
    out.write_text(
        json.dumps(
            {
                "heartbeat_seconds": HEARTBEAT_SECONDS,
                "store": "sqlite" if args.sqlite else "postgresql",
                "results": results,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out.relative_to(ROOT)}")


def summarize(backend: str, label: str, kind: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    push = [run[f"{kind}_push"] for run in runs]
    pull = [run[f"{kind}_pull"] for run in runs]
    return {
        "backend": backend,
        "size": label,
        "task": "python" if kind == "py" else "node (runtime)",
        "push_seconds": statistics.median(r["seconds"] for r in push),
        "pull_seconds": statistics.median(r["seconds"] for r in pull),
        "worst_heartbeat_gap_push_seconds": max(r["worst_heartbeat_gap_seconds"] for r in push),
        "worst_heartbeat_gap_pull_seconds": max(r["worst_heartbeat_gap_seconds"] for r in pull),
        "runs": len(runs),
    }


def print_row(row: dict[str, Any]) -> None:
    if not hasattr(print_row, "header"):
        print(
            f"{'backend':<15}{'size':>6}  {'task':<15}{'push s':>9}{'pull s':>9}"
            f"{'hb gap push':>13}{'hb gap pull':>13}"
        )
        print_row.header = True  # type: ignore[attr-defined]
    print(
        f"{row['backend']:<15}{row['size']:>6}  {row['task']:<15}{row['push_seconds']:>9.4f}"
        f"{row['pull_seconds']:>9.4f}{row['worst_heartbeat_gap_push_seconds']:>13.2f}"
        f"{row['worst_heartbeat_gap_pull_seconds']:>13.2f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
