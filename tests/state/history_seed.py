"""A store with history of every kind around one time: what ``db clean`` tests delete and keep.

Runs of DAG ``old`` ended before ``CUTOFF`` (success, failed) go, with their task instances,
XComs (one refers to an object), a human-in-the-loop question, state values (one refers to an
object), a backfill link, and the asset event they made. Kept: a run ended after the cutoff, a
run still running, a run marked success whose try still runs, a run of DAG ``other`` (for
``--dag-id``), an old asset event a partitioned DAG still waits on, and everything of those
runs.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from sqlalchemy import func, select

from state.core.db import session_scope
from state.core.models import (
    Asset,
    AssetEvent,
    BackfillDagRun,
    Base,
    DagRun,
    HITLDetail,
    PartitionEventQueue,
    TaskInstance,
    TaskStateValue,
    XCom,
)
from state.core.objects import STATE_OBJECT_KEY
from worker.xcom.object_storage import REFERENCE_KEY

CUTOFF = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
OLD = CUTOFF - dt.timedelta(days=30)
NEW = CUTOFF + dt.timedelta(days=1)
#: (dag_id, run_id, run state, ended, the state of its tasks): what goes, then what stays.
GONE = [("old", "s1", "success", OLD, "success"), ("old", "f1", "failed", OLD, "failed")]
KEPT = [
    ("old", "new1", "success", NEW, "success"),
    ("old", "live", "running", None, "running"),
    ("old", "marked", "success", OLD, "running"),
    ("other", "s1", "success", OLD, "success"),
]
TASKS = ("a", "b", "c")


def seed(url: str, objects: Path) -> None:
    """The rows; each run's XCom ``big`` and state ``big`` refer to a file under ``objects``."""
    with session_scope(url) as session:
        asset = Asset(uri="s3://bucket/x", name="x")
        session.add(asset)
        session.flush()
        for dag_id, run_id, state, ended, ti_state in GONE + KEPT:
            run = DagRun(dag_id=dag_id, run_id=run_id, state=state, end_date=ended)
            run.created_at = run.start_date = OLD - dt.timedelta(hours=1)
            session.add(run)
            session.flush()
            session.add(BackfillDagRun(dag_run_id=run.id, backfill_id=1))
            for task_id in TASKS:
                ti = TaskInstance(dag_id=dag_id, run_id=run_id, task_id=task_id,
                                  state=ti_state, end_date=ended)  # fmt: skip
                session.add(ti)
                if task_id == "a":  # a question asked, answered or not
                    session.flush()
                    session.add(HITLDetail(ti_id=ti.id, try_number=1, subject="ok?",
                                           options=["yes"], multiple=False, params={},
                                           params_input={}, created_at=OLD))  # fmt: skip
                key = dict(dag_id=dag_id, run_id=run_id, task_id=task_id)
                session.add(XCom(**key, key="return_value", value="1"))
                session.add(TaskStateValue(**key, key="small", value='"v"'))
            big = {REFERENCE_KEY: f"file://{_object(objects, 'xcom', dag_id, run_id)}", "bytes": 3}
            session.add(XCom(dag_id=dag_id, run_id=run_id, task_id="a", key="big",
                             value=json.dumps(big)))  # fmt: skip
            state_big = _object(objects, "state", dag_id, run_id)
            reference = {STATE_OBJECT_KEY: f"file://{state_big}", "bytes": 3}
            session.add(TaskStateValue(dag_id=dag_id, run_id=run_id, task_id="a", key="big",
                                       value=json.dumps(reference)))  # fmt: skip
            when = ended if (dag_id, run_id, state, ended, ti_state) in GONE else NEW
            session.add(AssetEvent(asset_id=asset.id, source_dag_id=dag_id,
                                   source_run_id=run_id, timestamp=when))  # fmt: skip
        waited = AssetEvent(asset_id=asset.id, source_dag_id="old", timestamp=OLD)
        session.add(waited)
        session.flush()
        session.add(PartitionEventQueue(target_dag_id="downstream", asset_event_id=waited.id))


def _object(objects: Path, kind: str, dag_id: str, run_id: str) -> Path:
    path = objects / kind / dag_id / run_id / "big"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('"x"')
    return path


def object_path(objects: Path, kind: str, dag_id: str, run_id: str) -> Path:
    return objects / kind / dag_id / run_id / "big"


def runs_left(url: str) -> set[tuple[str, str]]:
    with session_scope(url) as session:
        return {(r.dag_id, r.run_id) for r in session.execute(select(DagRun.dag_id, DagRun.run_id))}


def rows_of(url: str, model: type[Base], dag_id: str, run_id: str) -> int:
    with session_scope(url) as session:
        query = select(func.count()).select_from(model)
        query = query.where(model.dag_id == dag_id, model.run_id == run_id)  # type: ignore[attr-defined]
        return int(session.scalar(query) or 0)


def table_counts(url: str) -> dict[str, int]:
    tables = (DagRun, TaskInstance, XCom, TaskStateValue, BackfillDagRun, AssetEvent)
    with session_scope(url) as session:
        return {
            t.__tablename__: int(session.scalar(select(func.count()).select_from(t)) or 0)
            for t in tables
        }
