"""DAGs, tasks, runs: read, paused, triggered, marked, cleared and deleted through the API."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy import update

from state.core.db import session_scope
from state.core.models import DagModel
from tests.api.conftest import conforms
from tests.state.harness import TI, Home

Headers = Callable[[str], dict[str, str]]
V2 = "/api/v2"


def trigger(api: TestClient, headers: dict[str, str], run_id: str, **body: object) -> dict:
    reply = api.post(
        f"{V2}/dags/etl/dagRuns", json={"logical_date": None, "dag_run_id": run_id, **body},
        headers=headers,
    )  # fmt: skip
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_dags_list_pages_and_orders_as_airflow(api: TestClient, as_role: Headers) -> None:
    viewer = as_role("viewer")
    page = api.get(f"{V2}/dags", params={"limit": 1, "order_by": "-dag_id"}, headers=viewer).json()
    conforms("DAGCollectionResponse", page)
    assert page["total_entries"] == 3
    assert [dag["dag_id"] for dag in page["dags"]] == ["solo"]
    second = api.get(
        f"{V2}/dags", params={"limit": 1, "offset": 1, "order_by": "-dag_id"}, headers=viewer
    )
    assert [dag["dag_id"] for dag in second.json()["dags"]] == ["fan"]
    assert (
        api.get(f"{V2}/dags", params={"dag_id_pattern": "ol"}, headers=viewer).json()[
            "total_entries"
        ]
        == 1
    )


def test_an_unknown_order_by_is_400_naming_the_fields(api: TestClient, as_role: Headers) -> None:
    reply = api.get(f"{V2}/dags", params={"order_by": "owner_password"}, headers=as_role("viewer"))
    assert reply.status_code == 400
    assert "cannot order by 'owner_password'" in reply.json()["detail"]


def test_a_dag_its_details_and_tasks(api: TestClient, as_role: Headers) -> None:
    viewer = as_role("viewer")
    dag = conforms("DAGResponse", api.get(f"{V2}/dags/etl", headers=viewer).json())
    assert dag.tags[0].name == "demo" and not dag.has_import_errors  # type: ignore[attr-defined]
    details = api.get(f"{V2}/dags/etl/details", headers=viewer).json()
    conforms("DAGDetailsResponse", details)
    assert details["params"]["n"]["value"] == 5
    tasks = api.get(f"{V2}/dags/etl/tasks", headers=viewer).json()
    conforms("TaskCollectionResponse", tasks)
    assert [(t["task_id"], t["downstream_task_ids"]) for t in tasks["tasks"]] == [
        ("extract", ["load"]),
        ("load", []),
    ]
    load = api.get(f"{V2}/dags/etl/tasks/load", headers=viewer).json()
    assert load["retries"] == 2 and load["retry_delay"]["__type"] == "TimeDelta"
    assert api.get(f"{V2}/dags/etl/tasks/nope", headers=viewer).status_code == 404
    assert api.get(f"{V2}/dags/nope", headers=viewer).json() == {
        "detail": "no DAG named 'nope': see `tradewind dags list`"
    }


def test_pausing_needs_the_user_role_and_sticks(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    body = {"is_paused": True}
    assert api.patch(f"{V2}/dags/etl", json=body, headers=as_role("viewer")).status_code == 403
    reply = api.patch(f"{V2}/dags/etl", json=body, headers=as_role("user"))
    assert reply.status_code == 200 and reply.json()["is_paused"] is True
    assert home.dag_model("etl").is_paused
    paused = api.get(f"{V2}/dags", params={"paused": True}, headers=as_role("viewer")).json()
    assert [dag["dag_id"] for dag in paused["dags"]] == ["etl"]
    bad = api.patch(
        f"{V2}/dags/etl", json={"is_paused": True, "owner": "x"}, headers=as_role("user")
    )
    assert bad.status_code == 422


def test_trigger_creates_a_queued_run_with_its_conf(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    run = trigger(api, as_role("user"), "r1", conf={"n": 7})
    conforms("DAGRunResponse", run)
    assert (run["state"], run["conf"], run["run_type"]) == ("queued", {"n": 7}, "manual")
    again = api.post(
        f"{V2}/dags/etl/dagRuns", json={"logical_date": None, "dag_run_id": "r1"},
        headers=as_role("user"),
    )  # fmt: skip
    assert again.status_code == 409 and "already has a run 'r1'" in again.json()["detail"]
    listed = api.get(f"{V2}/dags/etl/dagRuns", headers=as_role("viewer")).json()
    conforms("DAGRunCollectionResponse", listed)
    assert [r["dag_run_id"] for r in listed["dag_runs"]] == ["r1"]
    every = api.get(f"{V2}/dags/~/dagRuns", params={"state": "queued"}, headers=as_role("viewer"))
    assert every.json()["total_entries"] == 1


def test_conf_is_checked_against_params_with_a_schema(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    with session_scope(home.url) as session:
        model = session.get_one(DagModel, "etl")
        structure = dict(model.structure)
        # What the authoring API's Param(5, type="integer", minimum=1) and a required Param()
        # write: the defaults under params, the schemas under param_specs.
        structure["param_specs"] = {
            "n": {"schema": {"type": "integer", "minimum": 1}, "has_default": True},
            "day": {"schema": {"type": "string", "format": "date"}, "has_default": False},
        }
        # A new structure is a new version: structures are parsed once per version hash.
        changed = {"structure": structure, "version_hash": "f" * 64}
        session.execute(update(DagModel).where(DagModel.dag_id == "etl").values(**changed))
    user = as_role("user")
    cases = (
        ({"n": "five", "day": "2026-12-01"}, "param 'n': 'five' is not of type 'integer'"),
        ({"n": 0, "day": "2026-12-01"}, "param 'n': 0 is less than the minimum of 1"),
        ({"day": "tuesday"}, "param 'day': 'tuesday' is not a 'date'"),
        ({}, "param 'day' is required: it has no default and the conf does not give it"),
    )
    for conf, words in cases:
        reply = api.post(
            f"{V2}/dags/etl/dagRuns", json={"logical_date": None, "conf": conf}, headers=user
        )
        assert reply.status_code == 400, reply.text
        assert reply.json()["detail"] == words
    assert api.get(f"{V2}/dags/etl/dagRuns", headers=user).json()["total_entries"] == 0
    assert trigger(api, user, "ok", conf={"day": "2026-12-01"})["conf"] == {"day": "2026-12-01"}
    details = api.get("/api/v2/dags/etl/details", headers=user).json()
    assert details["params"]["n"] == {
        "value": 5,
        "description": None,
        "schema": {"type": "integer", "minimum": 1},
    }


def test_a_run_marked_success_marks_its_unfinished_tasks(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    trigger(api, as_role("user"), "r1")
    reply = api.patch(
        f"{V2}/dags/etl/dagRuns/r1", json={"state": "success"}, headers=as_role("user")
    )
    assert reply.status_code == 200 and reply.json()["state"] == "success"
    run_pk = _run_pk(home, "r1")
    assert home.states(run_pk) == {"extract": TI.SUCCESS, "load": TI.SUCCESS}
    failed = api.patch(
        f"{V2}/dags/etl/dagRuns/r1", json={"state": "failed"}, headers=as_role("user")
    )
    assert failed.json()["state"] == "failed"
    bad = api.patch(f"{V2}/dags/etl/dagRuns/r1", json={"state": "running"}, headers=as_role("user"))
    assert bad.status_code == 422


def _run_pk(home: Home, run_id: str) -> int:
    from sqlalchemy import select

    from state.core.models import DagRun

    with session_scope(home.url) as session:
        return session.scalars(select(DagRun.id).where(DagRun.run_id == run_id)).one()


def test_clearing_a_run_resets_its_tasks_and_requeues_it(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    trigger(api, as_role("user"), "r1")
    api.patch(f"{V2}/dags/etl/dagRuns/r1", json={"state": "failed"}, headers=as_role("user"))
    run_pk = _run_pk(home, "r1")
    dry = api.post(f"{V2}/dags/etl/dagRuns/r1/clear", json={}, headers=as_role("user")).json()
    conforms("TaskInstanceCollectionResponse", dry)
    assert dry["total_entries"] == 2
    assert home.states(run_pk) == {"extract": TI.SKIPPED, "load": TI.SKIPPED}  # a dry run
    reply = api.post(
        f"{V2}/dags/etl/dagRuns/r1/clear", json={"dry_run": False}, headers=as_role("user")
    )
    assert reply.json()["state"] == "queued"
    assert home.states(run_pk) == {"extract": TI.NONE, "load": TI.NONE}


def test_deleting_a_run_deletes_its_task_instances(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    trigger(api, as_role("user"), "r1")
    assert api.delete(f"{V2}/dags/etl/dagRuns/r1", headers=as_role("viewer")).status_code == 403
    assert api.delete(f"{V2}/dags/etl/dagRuns/r1", headers=as_role("user")).status_code == 204
    assert api.get(f"{V2}/dags/etl/dagRuns/r1", headers=as_role("user")).status_code == 404
    reply = api.get(f"{V2}/dags/~/dagRuns/~/taskInstances", headers=as_role("user"))
    assert reply.json()["total_entries"] == 0


def test_dag_stats_count_runs_by_state(api: TestClient, as_role: Headers) -> None:
    trigger(api, as_role("user"), "r1")
    trigger(api, as_role("user"), "r2")
    api.patch(f"{V2}/dags/etl/dagRuns/r2", json={"state": "failed"}, headers=as_role("user"))
    stats = api.get(f"{V2}/dagStats", params={"dag_ids": "etl"}, headers=as_role("viewer")).json()
    conforms("DagStatsCollectionResponse", stats)
    counts = {s["state"]: s["count"] for s in stats["dags"][0]["stats"]}
    assert counts == {"queued": 1, "running": 0, "success": 0, "failed": 1}


def test_dag_source_is_the_dag_file(api: TestClient, as_role: Headers) -> None:
    source = api.get(f"{V2}/dagSources/etl", headers=as_role("viewer")).json()
    conforms("DAGSourceResponse", source)
    assert '@dag(dag_id="etl"' in source["content"]
