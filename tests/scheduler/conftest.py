"""Fixtures for the scheduler's tests: a fresh store, DAGs stored without files, and SQL counting.

A DAG here is its stored structure only (what ``state/`` schedules on); tests that need a DAG
file and its code write one into ``tmp_path``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, select
from sqlalchemy.orm import Session

from state.core.db import get_engine, session_factory
from state.core.models import Base, DagModel, DagRun, Pool, TaskInstance, utcnow
from state.engine.runs import create_run


def task_spec(upstream: list[str] | None = None, **options: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "upstream": sorted(upstream or []),
        "trigger_rule": "all_success",
        "retries": 0,
        "retry_delay_seconds": 0,
        "execution_timeout_seconds": None,
        "queue": "default",
        "pool": "default_pool",
        "runtime": False,
        "mapping": None,
    }
    spec.update(options)
    return spec


def structure(dag_id: str, tasks: dict[str, dict[str, Any]], **options: Any) -> dict[str, Any]:
    result: dict[str, Any] = {
        "dag_id": dag_id,
        "schedule": None,
        "start_date": None,
        "catchup": False,
        "max_active_tasks": 16,
        "max_active_runs": 16,
        "params": {},
        "tags": [],
        "tasks": tasks,
    }
    result.update(options)
    return result


def chain(n: int, **options: Any) -> dict[str, dict[str, Any]]:
    return {f"t{i}": task_spec([f"t{i - 1}"] if i else [], **options) for i in range(n)}


def wide(n: int, **options: Any) -> dict[str, dict[str, Any]]:
    return {f"t{i}": task_spec(**options) for i in range(n)}


def store_dag(session: Session, dag_id: str, tasks: dict[str, Any], **options: Any) -> DagModel:
    """Store (or replace) a DAG's structure as the sync would."""
    shape = structure(dag_id, tasks, **options)
    version = hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()
    model = session.get(DagModel, dag_id)
    if model is None:
        model = DagModel(dag_id=dag_id, fileloc=f"/nowhere/{dag_id}.py", is_paused=False)
        session.add(model)
    model.structure, model.version_hash, model.is_active = shape, version, True
    model.last_parsed_at = utcnow()
    session.flush()
    return model


def new_run(session: Session, dag_id: str, run_id: str = "r1") -> DagRun:
    run = create_run(session, dag_id, run_id=run_id)
    session.flush()
    return run


def tis_of(session: Session, run: DagRun) -> dict[str, TaskInstance]:
    query = select(TaskInstance).where(
        TaskInstance.dag_id == run.dag_id, TaskInstance.run_id == run.run_id
    )
    rows = session.scalars(query, execution_options={"populate_existing": True})
    return {ti.task_id: ti for ti in rows}


def create_schema(url: str) -> str:
    Base.metadata.create_all(get_engine(url))
    with session_factory(url).begin() as session:
        session.add(Pool(name="default_pool", slots=128))
    return url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> Iterator[str]:
    url = f"sqlite:///{tmp_path}/tradewind.db"
    yield create_schema(url)
    get_engine(url).dispose()


@pytest.fixture
def session(sqlite_url: str) -> Iterator[Session]:
    with session_factory(sqlite_url)() as session:
        yield session


class StatementLog:
    """Every SQL statement an engine runs while the log is open (``before_cursor_execute``)."""

    def __init__(self) -> None:
        self.statements: list[str] = []

    def __call__(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        self.statements.append(statement)

    @property
    def writes(self) -> list[str]:
        verbs = ("INSERT", "UPDATE", "DELETE")
        return [s for s in self.statements if s.lstrip().upper().startswith(verbs)]


@pytest.fixture
def count_statements(sqlite_url: str) -> Iterator[StatementLog]:
    engine = get_engine(sqlite_url)
    log = StatementLog()
    event.listen(engine, "before_cursor_execute", log)
    yield log
    event.remove(engine, "before_cursor_execute", log)
