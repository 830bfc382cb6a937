"""The API's clears follow ``ExternalTaskMarker``s: clearing a marker's task instance (or a run
holding one) clears the marked task, and its downstream, in the other DAG's run at the marker's
logical date; a clear deeper than the first marker's ``recursion_depth`` is a 400."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy import update

from state.core.db import session_scope
from state.core.models import TaskInstance
from state.engine.runs import create_run
from tests.state.harness import TI, Home

Headers = Callable[[str], dict[str, str]]
WHEN = dt.datetime(2026, 1, 2, tzinfo=dt.UTC)

MARKER_DAGS = """
from tradewind import DAG, task
from tradewind.standard.external_task import ExternalTaskMarker


@task
def a():
    pass


@task
def b():
    pass


with DAG("parent"):
    ExternalTaskMarker(task_id="mark", external_dag_id="child", external_task_id="a")

with DAG("shallow"):
    ExternalTaskMarker(
        task_id="mark", external_dag_id="parent", external_task_id="mark", recursion_depth=1
    )

with DAG("child"):
    a() >> b()
"""


def runs_done(home: Home, *dag_ids: str) -> dict[str, int]:
    home.write_dag(MARKER_DAGS, "markers.py")
    home.sync()
    pks = {}
    with session_scope(home.url) as session:
        for dag_id in dag_ids:
            run = create_run(session, dag_id, run_id="r1", data_interval=(WHEN, WHEN))
            session.flush()
            pks[dag_id] = run.id
        session.execute(update(TaskInstance).values(state=TI.SUCCESS))
    return pks


def test_clearing_a_marker_through_the_api_clears_the_child_run(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    pks = runs_done(home, "parent", "child")
    body = {"dag_run_id": "r1", "task_ids": ["mark"], "only_failed": False, "dry_run": False}
    done = api.post("/api/v2/dags/parent/clearTaskInstances", json=body, headers=as_role("user"))
    assert done.status_code == 200, done.text
    assert home.states(pks["parent"]) == {"mark": TI.NONE}
    assert home.states(pks["child"]) == {"a": TI.NONE, "b": TI.NONE}


def test_a_clear_too_deep_through_markers_is_a_400(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    pks = runs_done(home, "shallow", "parent", "child")
    run_clear = {"dry_run": False, "only_failed": False}
    refused = api.post(
        "/api/v2/dags/shallow/dagRuns/r1/clear", json=run_clear, headers=as_role("user")
    )
    assert refused.status_code == 400
    assert refused.json()["detail"].startswith("clearing parent.mark goes deeper than recursion")
    assert home.states(pks["shallow"]) == home.states(pks["parent"]) == {"mark": TI.SUCCESS}
    assert home.states(pks["child"]) == {"a": TI.SUCCESS, "b": TI.SUCCESS}  # nothing cleared
