"""The context's keys read from the store, through the real fleet (scheduler and Celery worker
on PostgreSQL + Redis): the previous successful run, a mapped task's count and names, and the
asset events that created an asset run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select

from state.core.db import session_scope
from state.core.models import DagRun, TaskInstance
from tests.integration.conftest import Fleet

pytestmark = pytest.mark.integration
DAGS = Path(__file__).parent / "context_dags"


def run_of(fleet: Fleet, dag_id: str) -> DagRun | None:
    with session_scope(fleet.url) as session:
        return session.scalars(select(DagRun).filter_by(dag_id=dag_id)).first()


def test_the_context_reads_the_store_through_the_fleet(make_fleet: Callable[..., Fleet]) -> None:
    fleet = make_fleet(DAGS)
    fleet.start_worker()
    fleet.start_scheduler()

    fleet.trigger("context_fleet", "r1")
    assert fleet.wait_run("context_fleet", "r1") == "success"
    fleet.trigger("context_fleet", "r2")
    fleet.trigger("reports_producer", "p1")
    assert fleet.wait_run("context_fleet", "r2") == "success"
    assert fleet.wait_run("reports_producer", "p1") == "success"

    first = run_of(fleet, "context_fleet")
    assert first is not None and first.start_date is not None
    assert json.loads(fleet.xcom("context_fleet", "r1", "previous") or "") == ["None", "None"]
    [started, _] = json.loads(fleet.xcom("context_fleet", "r2", "previous") or "")
    assert started == str(first.start_date)
    with session_scope(fleet.url) as session:
        names = session.execute(
            select(TaskInstance.map_index, TaskInstance.rendered_map_index)
            .filter_by(dag_id="context_fleet", run_id="r1", task_id="each")
            .order_by(TaskInstance.map_index)
        ).all()
    assert [tuple(row) for row in names] == [(0, "item-a"), (1, "item-b")]
    assert fleet.xcom("context_fleet", "r1", "each") == "2"

    fleet.wait_for(lambda: run_of(fleet, "reports_consumer") is not None, 60, "the asset run")
    consumer = run_of(fleet, "reports_consumer")
    assert consumer is not None
    assert fleet.wait_run("reports_consumer", consumer.run_id) == "success"
    read = json.loads(fleet.xcom("reports_consumer", consumer.run_id, "read") or "")
    assert read == ["asset_triggered", ["p1"]]
