"""A DAG folder written for Airflow 2, unchanged, on the real fleet (scheduler and Celery worker
on PostgreSQL + Redis): ``airflow.operators.*_operator`` imports, ``DummyOperator``,
``PythonOperator(provide_context=True)``, ``schedule_interval``, ``days_ago``, ``Dataset``,
``Variable.get(default_var=...)`` and the Airflow 2 template keys."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select

from state.core.db import session_scope
from state.core.models import DagRun
from tests.integration.conftest import Fleet

pytestmark = pytest.mark.integration

DAGS = Path(__file__).parent / "airflow2_dags"


@pytest.fixture
def fleet(make_fleet: Callable[..., Fleet]) -> Fleet:
    running = make_fleet(DAGS)
    running.start_worker()
    running.start_scheduler()
    return running


def runs_of(fleet: Fleet, dag_id: str) -> int:
    with session_scope(fleet.url) as session:
        return len(session.scalars(select(DagRun.id).filter_by(dag_id=dag_id)).all())


def test_an_airflow2_folder_runs_unchanged(fleet: Fleet) -> None:
    fleet.trigger("daily_sales_report", "sales", {})
    fleet.trigger("inventory_snapshot", "snap", {})

    assert fleet.wait_run("daily_sales_report", "sales", timeout=120) == "success"
    found = fleet.task_states("daily_sales_report", "sales")
    states = {task: state for task, (state, _) in found.items()}
    assert states == {
        "start": "success",
        "extract_sales": "success",
        "choose_path": "success",
        "summarize": "success",
        "no_data": "skipped",
        "report": "success",
        "end": "success",
    }
    assert fleet.xcom("daily_sales_report", "sales", "summarize") == "150"
    assert fleet.wait_run("inventory_snapshot", "snap", timeout=120) == "success"
    # The Dataset the snapshot updated creates the consumer's run.
    fleet.wait_for(
        lambda: runs_of(fleet, "inventory_consumer") > 0,
        timeout=60,
        what="inventory_consumer's run from the Dataset",
    )
    log = fleet.log("scheduler")
    assert "schedule_interval (Airflow 3: schedule)" in log
    assert "DummyOperator (Airflow 3: EmptyOperator)" in log
