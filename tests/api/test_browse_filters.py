"""The lists' filters the browses use, in the API as Airflow 3.3 names them: ``GET /dags`` by
tags, owners, last run state and display name with its orderings; runs and task instances by
dates and duration; and Airflow's own client sending them."""

from __future__ import annotations

import datetime as dt
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest
import uvicorn
from fastapi.testclient import TestClient
from sqlalchemy import update

from api import create_app
from state.core.db import session_scope
from state.core.models import DagRun, TaskInstance
from tests.api.conftest import PASSWORD
from tests.state.harness import Home

Headers = Callable[[str], dict[str, str]]

OWNED = """
from tradewind import DAG, task


@task(owner="ana")
def report() -> None:
    pass


@task(owner="bo")
def audit() -> None:
    pass


with DAG("finance_report", tags=["finance", "daily"], dag_display_name="Finance: monthly report"):
    report() >> audit()

with DAG("finance_audit", tags=["finance"]):
    audit.override(task_id="only")()
"""
T0 = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)


def _run(
    home: Home, dag_id: str, run_id: str, state: str, start: dt.datetime, seconds: int
) -> None:
    """A run in ``state`` that started at ``start`` and took ``seconds``; its tasks alike."""
    home.trigger(dag_id, run_id=run_id)
    end = start + dt.timedelta(seconds=seconds)
    with session_scope(home.url) as session:
        match = (DagRun.dag_id == dag_id, DagRun.run_id == run_id)
        values = {"state": state, "start_date": start, "end_date": end}
        session.execute(update(DagRun).where(*match).values(**values))
        ti_match = (TaskInstance.dag_id == dag_id, TaskInstance.run_id == run_id)
        ti_values = values | {"try_number": 1}
        session.execute(update(TaskInstance).where(*ti_match).values(**ti_values))


@pytest.fixture
def runs(home: Home) -> Home:
    home.write_dag(OWNED, name="owned.py")
    home.sync()
    _run(home, "finance_report", "r1", "success", T0, 30)
    _run(home, "finance_report", "r2", "failed", T0 + dt.timedelta(days=1), 600)
    _run(home, "finance_audit", "a1", "success", T0 + dt.timedelta(days=2), 5)
    _run(home, "etl", "e1", "running", T0 + dt.timedelta(days=3), 1)
    return home


def _dag_ids(api: TestClient, headers: dict[str, str], query: str) -> list[str]:
    reply = api.get(f"/api/v2/dags?{query}", headers=headers)
    assert reply.status_code == 200, reply.text
    return [dag["dag_id"] for dag in reply.json()["dags"]]


def test_dags_by_tags_owners_last_run_state_and_name(
    api: TestClient, as_role: Headers, runs: Home
) -> None:
    viewer = as_role("viewer")
    assert _dag_ids(api, viewer, "tags=finance") == ["finance_audit", "finance_report"]
    assert _dag_ids(api, viewer, "tags=daily&tags=demo") == ["etl", "finance_report"]
    assert _dag_ids(api, viewer, "tags=finance&tags=daily&tags_match_mode=all") == [
        "finance_report"
    ]
    assert _dag_ids(api, viewer, "owners=ana") == ["finance_report"]
    assert _dag_ids(api, viewer, "owners=bo") == ["finance_audit", "finance_report"]
    assert _dag_ids(api, viewer, "last_dag_run_state=failed") == ["finance_report"]
    assert _dag_ids(api, viewer, "last_dag_run_state=running") == ["etl"]
    assert _dag_ids(api, viewer, "dag_display_name_pattern=MONTHLY") == ["finance_report"]


def test_dags_ordered_by_last_run_and_next_run(
    api: TestClient, as_role: Headers, runs: Home
) -> None:
    viewer = as_role("viewer")
    newest_first = _dag_ids(api, viewer, "order_by=-last_run_start_date&exclude_stale=true")
    assert newest_first[:3] == ["etl", "finance_audit", "finance_report"]
    assert _dag_ids(api, viewer, "order_by=last_run_state&last_dag_run_state=success") == [
        "finance_audit"
    ]
    assert api.get("/api/v2/dags?order_by=next_dagrun", headers=viewer).status_code == 200
    bad = api.get("/api/v2/dags?order_by=colour", headers=viewer)
    assert bad.status_code == 400 and "colour" in bad.json()["detail"]
    assert api.get("/api/v2/dags?last_dag_run_state=done", headers=viewer).status_code == 422


def test_runs_across_dags_by_dates_duration_and_dag(
    api: TestClient, as_role: Headers, runs: Home
) -> None:
    def run_ids(query: str) -> list[str]:
        reply = api.get(f"/api/v2/dags/~/dagRuns?{query}", headers=as_role("viewer"))
        assert reply.status_code == 200, reply.text
        return [run["dag_run_id"] for run in reply.json()["dag_runs"]]

    assert run_ids("dag_id_pattern=finance&order_by=-start_date") == ["a1", "r2", "r1"]
    assert run_ids("start_date_gte=2026-12-02T00:00:00Z&start_date_lte=2026-12-03") == ["r2", "a1"]
    assert run_ids("duration_gte=60") == ["r2"]
    assert run_ids("duration_lte=10&order_by=-duration") == ["a1", "e1"]
    assert run_ids("end_date_lte=2026-12-01T00:01:00Z") == ["r1"]


def test_task_instances_across_dags_by_dates_duration_and_names(
    api: TestClient, as_role: Headers, runs: Home
) -> None:
    def tis(query: str) -> list[tuple[str, str]]:
        path = f"/api/v2/dags/~/dagRuns/~/taskInstances?{query}"
        reply = api.get(path, headers=as_role("viewer"))
        assert reply.status_code == 200, reply.text
        return [(ti["dag_run_id"], ti["task_id"]) for ti in reply.json()["task_instances"]]

    assert tis("state=failed&dag_id_pattern=finance") == [("r2", "audit"), ("r2", "report")]
    assert tis("duration_gte=100") == [("r2", "audit"), ("r2", "report")]
    assert tis("task_display_name_pattern=onl&start_date_gte=2026-12-03") == [("a1", "only")]
    assert tis("start_date_gte=2026-12-04") == [("e1", "extract"), ("e1", "load")]
    bad = api.get(
        "/api/v2/dags/~/dagRuns/~/taskInstances?duration_gte=-1", headers=as_role("viewer")
    )
    assert bad.status_code == 422
    early = "/api/v2/dags/~/dagRuns?start_date_gte=0001-01-01T00:00:00%2B14:00"
    reply = api.get(early, headers=as_role("viewer"))
    assert reply.status_code == 422 and "out of range" in reply.json()["detail"]


@pytest.fixture
def served(runs: Home) -> Iterator[str]:
    """The app on uvicorn in a thread, for Airflow's client (it speaks real HTTP)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(create_app(runs.settings), host="127.0.0.1", port=port,
                            log_level="warning", ws="none", lifespan="off")  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="browse-api", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the API server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=30)


def test_airflows_client_filters_the_dag_list(served: str, home: Home) -> None:
    if "postgresql" in home.url:
        pytest.skip("the client's HTTP is the same on either store: SQLite is enough")
    import airflow_client.client as airflow
    import requests

    token = requests.post(
        f"{served}/auth/token", json={"username": "viewer", "password": PASSWORD}, timeout=30
    ).json()["access_token"]
    config = airflow.Configuration(host=served, access_token=token)
    with airflow.ApiClient(config) as client:
        dags = airflow.DAGApi(client)
        tagged = dags.get_dags(tags=["finance"], owners=["ana"], order_by=["-last_run_start_date"])
        assert [dag.dag_id for dag in tagged.dags] == ["finance_report"]
        assert tagged.dags[0].dag_display_name == "Finance: monthly report"
        failed = dags.get_dags(last_dag_run_state=airflow.DagRunState.FAILED)
        assert [dag.dag_id for dag in failed.dags] == ["finance_report"]
        runs = airflow.DagRunApi(client).get_dag_runs(
            "~", start_date_gte=T0 + dt.timedelta(hours=12), duration_gte=60
        )
        assert [run.dag_run_id for run in runs.dag_runs] == ["r2"]
