"""Runs, task instances, XComs and an asset as a day of work leaves them: what the browse tests
and their screenshots look at (written straight to the store, as the scheduler would)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import insert, update

from state.core.db import session_scope
from state.core.models import (
    Asset,
    AssetEvent,
    DagAssetReference,
    DagModel,
    DagRun,
    DagTag,
    TaskInstance,
    XCom,
)
from tests.state.harness import Home

DAY = dt.datetime(2026, 12, 1, 2, 0, tzinfo=dt.UTC)
#: (dag, run id, run type, run state, {task: (state, try number, seconds)})
RUNS = [
    ("etl", "scheduled__2026-12-01", "scheduled", "success",
     {"extract": ("success", 1, 4), "load": ("success", 1, 12)}),
    ("etl", "scheduled__2026-12-02", "scheduled", "failed",
     {"extract": ("success", 1, 5), "load": ("failed", 2, 31)}),
    ("etl", "manual__2026-12-03", "manual", "failed",
     {"extract": ("failed", 1, 2), "load": ("upstream_failed", 0, 0)}),
    ("etl", "scheduled__2026-12-04", "scheduled", "running",
     {"extract": ("success", 1, 3), "load": ("running", 1, 0)}),
    ("solo", "manual__2026-12-02", "manual", "success", {"only": ("success", 1, 1)}),
    ("solo", "manual__2026-12-04", "manual", "failed", {"only": ("failed", 1, 7)}),
]  # fmt: skip


def seed(home: Home) -> None:
    """Each run of ``RUNS`` with its task instances in their states, two XComs, an asset."""
    for dag_id, run_id, _kind, _state, _tasks in RUNS:
        home.trigger(dag_id, run_id=run_id)
    with session_scope(home.url) as session:
        for number, (dag_id, run_id, kind, state, tasks) in enumerate(RUNS):
            day = dt.date.fromisoformat(run_id.split("__")[1])
            start = dt.datetime.combine(day, DAY.timetz()) + dt.timedelta(minutes=number)
            running = state == "running"
            end = None if running else start + dt.timedelta(minutes=1)
            session.execute(
                update(DagRun)
                .where(DagRun.dag_id == dag_id, DagRun.run_id == run_id)
                .values(run_type=kind, state=state, logical_date=start, start_date=start,
                        end_date=end)
            )  # fmt: skip
            for task_id, (ti_state, tries, seconds) in tasks.items():
                began = start if tries else None
                ended = (
                    None
                    if ti_state == "running" or not tries
                    else start + dt.timedelta(seconds=seconds)
                )
                session.execute(
                    update(TaskInstance)
                    .where(TaskInstance.dag_id == dag_id, TaskInstance.run_id == run_id,
                           TaskInstance.task_id == task_id)
                    .values(state=ti_state, try_number=tries, start_date=began, end_date=ended,
                            hostname="worker-1" if tries else None)
                )  # fmt: skip
        session.add_all(
            [
                XCom(dag_id="etl", run_id=RUNS[0][1], task_id="extract", key="return_value",
                     value="[1, 2, 3]"),
                XCom(dag_id="etl", run_id=RUNS[0][1], task_id="load", key="return_value",
                     value="6"),
            ]
        )  # fmt: skip
        asset = Asset(uri="s3://lake/orders.parquet", name="orders", group="asset", extra={})
        session.add(asset)
        session.flush()
        session.add(DagAssetReference(dag_id="solo", reference="name:orders"))
        source = {"source_dag_id": "etl", "source_run_id": RUNS[0][1], "source_task_id": "load"}
        session.add(AssetEvent(asset_id=asset.id, extra={"rows": 6}, timestamp=DAY, **source))


TEAMS = ("billing", "growth", "search", "ledger", "ops")


def add_many_dags(home: Home, count: int) -> None:
    """``count`` more DAGs (``{team}_{n:04d}``), stored as a sync stores them, in one go: a
    DAG list of a few thousand DAGs without parsing a few thousand files."""
    with session_scope(home.url) as session:
        solo = session.get_one(DagModel, "solo")
        rows, tags = [], []
        for n in range(count):
            team = TEAMS[n % len(TEAMS)]
            dag_id = f"{team}_{n:04d}"
            structure = dict(solo.structure, dag_id=dag_id, tags=[team])
            rows.append({"dag_id": dag_id, "fileloc": solo.fileloc, "structure": structure,
                         "version_hash": f"v{n}", "owners": ",airflow,"})  # fmt: skip
            tags.append({"dag_id": dag_id, "name": team})
        session.execute(insert(DagModel), rows)
        session.execute(insert(DagTag), tags)
