"""The browses of the UI (issue 27) on a large store against an empty one, in the same run.

Two PostgreSQL stores, each with the same DAGs and users: one empty, one filled by bulk
``COPY`` with 5,000 more DAGs (tags and owners), 100,000 runs, 1,000,000 task instances,
100,000 XComs, 100 assets with 100,000 events and 500 backfills. Each page and API list is
fetched ``--n`` times from both stores, the two taken in turn (so a machine others load weighs
on both alike), through FastAPI's test client signed in as a browser is. The figures are p50
and p95 latency on the large store, its p50 on the empty one, their ratio and the statements
per request; the goal is a ratio of at most 2 and under 300 ms.

    python bench/ui.py --only browse [--n 20]

Writes bench/results/ui_browse.json.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy import text

from state.core.db import get_engine, session_scope
from state.core.models import Asset, DagModel

DAGS, RUNS_PER_DAG, TASKS_PER_RUN = 5_000, 20, 10
XCOMS, ASSETS, EVENTS_PER_ASSET, BACKFILLS = 100_000, 100, 1_000, 500
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
RUN_STATES = ["success"] * 17 + ["failed", "failed", "running"]
TI_STATES = ["success"] * 90 + ["failed"] * 5 + ["upstream_failed"] * 3 + ["skipped"] * 2
TEAMS = [f"team{n}" for n in range(20)]

#: name: path, the same on both stores (the DAG ``small`` is in both, with runs in the large one).
PAGES = {
    "DAG list": "/dags",
    "DAG list, search": "/dags?search=load_12",
    "DAG list, tag": "/dags?tags=team3",
    "DAG list, last run failed": "/dags?last_dag_run_state=failed",
    "DAG list, by last run": "/dags?order_by=-last_run_start_date",
    "DAG list, page 100": "/dags?page=100",
    "Runs browse": "/dag_runs",
    "Runs browse, failed": "/dag_runs?state=failed",
    "Runs browse, DAG contains": "/dag_runs?dag_id_pattern=load_012",
    "Runs browse, by start": "/dag_runs?order_by=-start_date",
    "Runs browse, page 20": "/dag_runs?page=20",
    "Runs tab": "/dags/small/runs",
    "Runs tab, failed manual": "/dags/small/runs?state=failed&run_type=manual",
    "TI browse": "/task_instances",
    "TI browse, DAG's failed": "/task_instances?dag_id=load_0042&state=failed",
    "TI browse, failed": "/task_instances?state=failed",
    "TI browse, by start": "/task_instances?order_by=-start_date",
    "TI browse, pool": "/task_instances?pool=etl_pool",
    "TI browse, task contains": "/task_instances?task_id_pattern=t3",
    "TI browse, long ones": "/task_instances?duration_gte=3000",
    "TI browse, page 100": "/task_instances?page=100",
    "XCom browse": "/xcoms",
    "XCom browse, DAG": "/xcoms?dag_id=load_0042",
    "Assets": "/assets",
    "Asset page": "/assets/1",
    "Backfills": "/backfills",
    "API dags by tag and last run": "/api/v2/dags?tags=team3&order_by=-last_run_start_date",
    "API dags, last run failed": "/api/v2/dags?last_dag_run_state=failed",
    "API runs, failed, by start": "/api/v2/dags/~/dagRuns?state=failed&order_by=-start_date",
    "API TIs, failed": "/api/v2/dags/~/dagRuns/~/taskInstances?state=failed&order_by=-id",
}


def _dag_rows(structure: dict[str, Any]) -> Iterator[tuple[Any, ...]]:
    now = T0 + dt.timedelta(days=400)
    for n in range(DAGS):
        dag_id = f"load_{n:04d}"
        team = TEAMS[n % len(TEAMS)]
        shaped = dict(structure, dag_id=dag_id, tags=[team, "bench"])
        yield (dag_id, "/bench/load.py", json.dumps(shaped), f"v{n}", False, True, now,
               now + dt.timedelta(minutes=n), None, f",{team}_owner,")  # fmt: skip


def _runs(dag_ids: list[str]) -> Iterator[tuple[Any, ...]]:
    for number, dag_id in enumerate(dag_ids):
        for r in range(RUNS_PER_DAG):
            start = T0 + dt.timedelta(days=r, minutes=number)
            state = RUN_STATES[(number + r) % len(RUN_STATES)]
            end = None if state == "running" else start + dt.timedelta(seconds=60 + r * 30)
            kind = "manual" if r % 4 == 0 else "scheduled"
            yield (dag_id, f"{kind}__{start.isoformat()}", state, kind, "{}", start, start,
                   start + dt.timedelta(days=1), start, start, end)  # fmt: skip


def _tis(runs: list[tuple[str, str, dt.datetime]], tasks: int) -> Iterator[tuple[Any, ...]]:
    rng = random.Random(27)
    for dag_id, run_id, start in runs:
        for t in range(tasks):
            state = rng.choice(TI_STATES)
            began = start + dt.timedelta(seconds=t * 5)
            seconds = rng.randint(1, 3600)
            pool = "etl_pool" if t == 7 else "default_pool"
            ended = began + dt.timedelta(seconds=seconds)
            tries = 1 + (state == "failed")
            yield (dag_id, run_id, f"t{t}", -1, state, tries, 2, 0, "default", pool, 1, 1,
                   "worker-1", began, ended, 0, 1)  # fmt: skip


_RUN_COLUMNS = (
    "dag_id, run_id, state, run_type, conf, logical_date, data_interval_start, "
    "data_interval_end, created_at, start_date, end_date"
)
_TI_COLUMNS = (
    "dag_id, run_id, task_id, map_index, state, try_number, max_tries, generation, queue, pool, "
    "priority_weight, pool_slots, hostname, start_date, end_date, queued_resends, deliveries"
)


def _copy(connection: psycopg.Connection[Any], statement: str, rows: Iterator[Any]) -> int:
    count = 0
    with connection.cursor() as cursor, cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row(row)
            count += 1
    return count


def load(url: str) -> dict[str, float]:
    """Fill the store at ``url`` by COPY; how many rows of each kind, and the seconds taken."""
    started = time.perf_counter()
    with session_scope(url) as session:
        structure = dict(session.get_one(DagModel, "small").structure)
    dag_ids = [f"load_{n:04d}" for n in range(DAGS)]
    plain = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain) as connection:
        dag_columns = (
            "dag_id, fileloc, structure, version_hash, is_paused, is_active, last_parsed_at, "
            "next_dagrun_after, display_name, owners"
        )
        _copy(connection, f"COPY dag ({dag_columns}) FROM STDIN", _dag_rows(structure))
        tags = ((f"load_{n:04d}", name) for n in range(DAGS) for name in (TEAMS[n % 20], "bench"))
        _copy(connection, "COPY dag_tag (dag_id, name) FROM STDIN", tags)
        runs = list(_runs([*dag_ids, "small"]))
        _copy(connection, f"COPY dag_run ({_RUN_COLUMNS}) FROM STDIN", iter(runs))
        keys = [(run[0], run[1], run[9]) for run in runs]
        ti_count = _copy(connection, f"COPY task_instance ({_TI_COLUMNS}) FROM STDIN",
                         _tis(keys[:-RUNS_PER_DAG], TASKS_PER_RUN))  # fmt: skip
        ti_count += _copy(connection, f"COPY task_instance ({_TI_COLUMNS}) FROM STDIN",
                          _tis(keys[-RUNS_PER_DAG:], 3))  # fmt: skip
        xcoms = ((d, r, "t0", -1, "return_value", "[1, 2, 3]", s) for d, r, s in keys[:XCOMS])
        columns = "dag_id, run_id, task_id, map_index, key, value, created_at"
        _copy(connection, f"COPY xcom ({columns}) FROM STDIN", xcoms)
        _load_assets_and_backfills(connection)
        connection.commit()
    with get_engine(url).connect() as connection:  # what autovacuum does after a bulk load
        connection.execute(text("ANALYZE"))
        connection.commit()
    return {"runs": len(runs), "task_instances": ti_count, "seconds": time.perf_counter() - started}


def _load_assets_and_backfills(connection: psycopg.Connection[Any]) -> None:
    assets = ((f"s3://lake/table_{n}", f"table_{n}", "asset", "{}", T0) for n in range(ASSETS))
    _copy(connection, 'COPY asset (uri, name, "group", extra, created_at) FROM STDIN', assets)
    events = (
        (
            1 + n % ASSETS,
            "{}",
            f"load_{n % DAGS:04d}",
            f"run_{n}",
            "t0",
            -1,
            T0 + dt.timedelta(minutes=n),
        )
        for n in range(ASSETS * EVENTS_PER_ASSET)
    )
    columns = (
        "asset_id, extra, source_dag_id, source_run_id, source_task_id, source_map_index, timestamp"
    )
    _copy(connection, f"COPY asset_event ({columns}) FROM STDIN", events)
    backfills = (
        (f"load_{n:04d}", T0, T0 + dt.timedelta(days=5), "{}", False, 4, T0, T0)
        for n in range(BACKFILLS)
    )
    columns = (
        "dag_id, from_date, to_date, dag_run_conf, is_paused, max_active_runs, created_at, "
        "updated_at"
    )
    _copy(connection, f"COPY backfill ({columns}) FROM STDIN", backfills)


def bench(stack: ExitStack, make_store: Any, n: int) -> dict[str, dict[str, object]]:
    """Both stores, then each page of ``PAGES`` on both, in turn."""
    from ui import measure_clients, ratio  # bench/ui.py: its signed-in client and its figures

    empty_client, empty_url = make_store(stack, "ui_empty_")
    large_client, large_url = make_store(stack, "ui_large_")
    loaded = load(large_url)
    with session_scope(empty_url) as session:  # the asset page's asset, with no events
        session.add(Asset(uri="s3://lake/table_0", name="table_0", group="asset", extra={}))
    print(f"loaded {loaded['runs']:,} runs, {loaded['task_instances']:,} task instances "
          f"in {loaded['seconds']:.0f} s")  # fmt: skip
    results: dict[str, dict[str, object]] = {}
    for name, path in PAGES.items():
        try:
            large, empty = measure_clients(
                [(large_client, large_url), (empty_client, empty_url)], path, n
            )
        except AssertionError as error:  # a page that answers no 200: named, the rest go on
            results[name] = {"skipped": str(error)[:200]}
            continue
        results[name] = ratio(large, empty)
        print(f"{name:34} {large['p50_ms']:8.1f} ms, empty {empty['p50_ms']:6.1f} ms", flush=True)
    out = Path(__file__).resolve().parent / "results" / "ui_browse.json"
    out.write_text(json.dumps({"loaded": loaded, "pages": results}, indent=2) + "\n")
    print(f"written {out}")
    return results
