"""CPU per try: ``SQLExecuteQueryOperator`` (common-sql + postgres providers) against a ``@task``
doing the same ``SELECT 1`` with psycopg directly, on one fleet, in the same run of this script.

Two DAGs of N independent tasks each: ``bench_sql_operator`` (N ``SQLExecuteQueryOperator``
tasks, ``conn_id="pg"``) and ``bench_sql_direct`` (N ``@task`` calls that read the same
connection with ``Connection.get`` and query it with psycopg). Each is triggered ``--rounds``
times, alternating; the CPU of the worker's processes (Celery's pool, the fork server, the task
processes it forked and reaped: ``process_cpu.py``) over a run, divided by N, is the CPU per try.
The providers come from the tests' cached venv (``tests/providers_env.py``), on PYTHONPATH.

    python bench/provider_sql_cpu.py [--n 40] [--rounds 2]

Prints the figures and writes bench/results/provider_sql_cpu.json. Goal: operator <= 1.5 x direct.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from fleet_throughput import (  # noqa: E402
    bench_database,
    fleet_env,
    own_broker,
    run_and_wait,
    running_fleet,
)
from process_cpu import Fleet, Snapshot, cpu_ms_by_role  # noqa: E402

from state.core.db import session_scope  # noqa: E402
from state.engine.runs import create_run  # noqa: E402
from state.records import put_connection  # noqa: E402
from tests.providers_env import providers_site  # noqa: E402

DAG_FILE = """
import pendulum
import psycopg
from airflow.providers.common.sql.operators.sql import SQLExecuteQueryOperator
from airflow.sdk import DAG, Connection, task

N = {n}
START = pendulum.datetime(2024, 1, 1, tz="UTC")

with DAG("bench_sql_operator", start_date=START, schedule=None):
    for i in range(N):
        SQLExecuteQueryOperator(task_id=f"q{{i}}", conn_id="pg", sql="SELECT 1")


@task
def direct():
    c = Connection.get("pg")
    with psycopg.connect(host=c.host, port=c.port, user=c.login, dbname=c.schema) as conn:
        return conn.execute("SELECT 1").fetchall()


with DAG("bench_sql_direct", start_date=START, schedule=None):
    for i in range(N):
        direct.override(task_id=f"d{{i}}")()
"""
ROLES = ("pool processes", "fork servers", "task processes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    site = providers_site()
    broker = own_broker()
    per_try: dict[str, list[float]] = {"bench_sql_operator": [], "bench_sql_direct": []}
    with (
        tempfile.TemporaryDirectory(prefix="tw-bench-sql-") as tmp,
        bench_database("tw_bench_sql_") as url,
    ):
        workdir = Path(tmp)
        dags = workdir / "dags"
        dags.mkdir()
        (dags / "bench_sql.py").write_text(DAG_FILE.format(n=args.n))
        path = os.pathsep.join([str(site), str(ROOT)])
        env = fleet_env(url, broker, dags, workdir / "home")
        env["PYTHONPATH"] = os.environ["PYTHONPATH"] = path  # the sync's children read it too
        with running_fleet(url, dags, env, workdir) as (worker, _scheduler):
            with session_scope(url) as session:
                parts = urlsplit(url)
                put_connection(
                    session,
                    "pg",
                    conn_type="postgres",
                    host=parts.hostname,
                    port=parts.port or 5432,
                    login=parts.username,
                    schema=parts.path.lstrip("/"),
                )
            fleet = Fleet(worker.pid)
            for round_number in range(args.rounds + 1):  # round 0 warms the fork server up
                for dag_id in per_try:
                    run_id = f"r{round_number}"
                    before = Snapshot.take(fleet)
                    with session_scope(url) as session:
                        create_run(session, dag_id, run_id=run_id)
                    run_and_wait(url, dag_id, args.n, run_id)
                    spent = cpu_ms_by_role(before, Snapshot.take(fleet))
                    if round_number:
                        per_try[dag_id].append(sum(spent[r] for r in ROLES) / args.n)
    operator = statistics.median(per_try["bench_sql_operator"])
    direct = statistics.median(per_try["bench_sql_direct"])
    result = {
        "n": args.n,
        "rounds": args.rounds,
        "cpu_ms_per_try_operator": round(operator, 1),
        "cpu_ms_per_try_direct": round(direct, 1),
        "ratio": round(operator / direct, 2),
        "all_operator": [round(v, 1) for v in per_try["bench_sql_operator"]],
        "all_direct": [round(v, 1) for v in per_try["bench_sql_direct"]],
    }
    print(json.dumps(result, indent=2))
    out = ROOT / "bench" / "results" / "provider_sql_cpu.json"
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
