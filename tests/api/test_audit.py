"""The audit trail through the API: who did what (``/eventLogs``), how a run was triggered and
by whom, notes on runs and task instances, every try with its own values.

Each action is recorded in the event log by the route that takes it, in its transaction; the
list filters as Airflow's, and no secret reaches ``extra``.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from fastapi.testclient import TestClient

from api.audit import about_tis
from api.models.task_instances import TaskInstanceHistoryResponse
from state.core.db import session_scope
from state.core.models import DagRun, TaskInstance
from state.records import Actor, record_event
from tests.api.conftest import PASSWORD, conforms
from tests.state.harness import TI, Home

Headers = Callable[[str], dict[str, str]]
RUNS = "/api/v2/dags/etl/dagRuns"


def _events(api: TestClient, as_role: Headers, **params: object) -> list[dict[str, object]]:
    reply = api.get("/api/v2/eventLogs", params=params, headers=as_role("viewer"))
    assert reply.status_code == 200, reply.text
    conforms("EventLogCollectionResponse", reply.json())
    events: list[dict[str, object]] = reply.json()["event_logs"]
    return events


def test_actions_are_recorded_with_who_what_and_where(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    user = as_role("user")
    body = {"dag_run_id": "r1", "conf": {"n": 2}, "note": "backfill of a gap"}
    run = api.post(RUNS, json=body, headers=user).json()
    conforms("DAGRunResponse", run)
    assert (run["triggered_by"], run["triggering_user_name"]) == ("rest_api", "user")
    assert run["note"] == "backfill of a gap"
    api.patch("/api/v2/dags/etl", json={"is_paused": True}, headers=user)
    api.patch(f"{RUNS}/r1", json={"state": "failed"}, headers=user)
    api.post(f"{RUNS}/r1/clear", json={"dry_run": False}, headers=user)
    body = {"key": "db_password", "value": "hunter2"}
    assert api.post("/api/v2/variables", json=body, headers=as_role("op")).status_code == 201

    events = _events(api, as_role, order_by="id", excluded_events=["create_token"])
    assert [(e["event"], e["owner"]) for e in events] == [
        ("trigger_dag_run", "user"),
        ("patch_dag", "user"),
        ("patch_dag_run", "user"),
        ("clear_dag_run", "user"),
        ("post_variable", "op"),
    ]
    trigger, paused, _, cleared, variable = events
    assert (trigger["dag_id"], trigger["run_id"]) == ("etl", "r1")
    assert json.loads(str(trigger["extra"])) == {
        "conf": {"n": 2},
        "origin": "api",
        "client": "testclient",
    }
    assert json.loads(str(paused["extra"]))["is_paused"] is True
    assert cleared["logical_date"] is not None
    assert "hunter2" not in str(variable["extra"])  # a value is never recorded
    assert json.loads(str(variable["extra"]))["key"] == "db_password"


def test_sign_ins_and_refusals_are_recorded(api: TestClient, as_role: Headers) -> None:
    as_role("viewer")
    refused = api.post("/auth/token", json={"username": "op", "password": "wrong"})
    assert refused.status_code == 401
    rows = _events(api, as_role, included_events=["create_token", "create_token_failed"])
    assert [(e["event"], e["owner"]) for e in rows] == [
        ("create_token_failed", "op"),
        ("create_token", "viewer"),
    ]
    assert PASSWORD not in json.dumps(rows) and "wrong" not in json.dumps(rows)


def test_the_list_filters_orders_and_pages_as_airflows(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    with session_scope(home.url) as session:
        for n, who in enumerate(["ann", "bob", "ann"]):
            actor = Actor(who, "cli", "host-a")
            record_event(session, actor, f"event_{n}", extra={"n": n, "token": "t0p"})
    assert [e["event"] for e in _events(api, as_role, owner="ann")] == ["event_2", "event_0"]
    assert [e["event"] for e in _events(api, as_role, event_pattern="nt_1")] == ["event_1"]
    assert len(_events(api, as_role, excluded_events=["event_0", "create_token"])) == 2
    page = _events(api, as_role, order_by="event", limit=2, offset=1, owner_prefix_pattern="")
    assert [e["event"] for e in page][:1] == ["event_0"]
    assert _events(api, as_role, after="2999-01-01T00:00:00Z") == []
    assert len(_events(api, as_role, before="2999-01-01T00:00:00")) == 4  # no zone: UTC
    one = api.get(f"/api/v2/eventLogs/{page[0]['event_log_id']}", headers=as_role("viewer"))
    conforms("EventLogResponse", one.json())
    assert json.loads(one.json()["extra"])["token"] == "***"  # a secret-looking key is masked
    assert api.get("/api/v2/eventLogs/999999", headers=as_role("viewer")).status_code == 404
    bad = api.get("/api/v2/eventLogs", params={"order_by": "nope"}, headers=as_role("viewer"))
    assert bad.status_code == 400 and "cannot order by 'nope'" in bad.json()["detail"]


def test_notes_on_runs_and_task_instances(api: TestClient, as_role: Headers, home: Home) -> None:
    run_pk = home.trigger("etl", run_id="r1")
    home.schedule(run_pk)
    user = as_role("user")
    noted = api.patch(f"{RUNS}/r1", json={"note": "late data"}, headers=user)
    assert noted.status_code == 200, noted.text
    conforms("DAGRunResponse", noted.json())
    assert noted.json()["note"] == "late data"
    assert api.get(f"{RUNS}/r1", headers=as_role("viewer")).json()["note"] == "late data"
    ti = f"{RUNS}/r1/taskInstances/extract"
    marked = api.patch(ti, json={"note": "flaky source"}, headers=user)
    assert marked.status_code == 200, marked.text
    assert api.get(ti, headers=as_role("viewer")).json()["note"] == "flaky source"
    too_long = api.patch(f"{RUNS}/r1", json={"note": "x" * 1001}, headers=user)
    assert too_long.status_code == 422
    viewer = api.patch(f"{RUNS}/r1", json={"note": "no"}, headers=as_role("viewer"))
    assert viewer.status_code == 403
    notes = _events(api, as_role, dag_id="etl", run_id="r1", owner="user")
    assert [(e["event"], e["task_id"]) for e in notes] == [
        ("patch_task_instance", "extract"),
        ("patch_dag_run", None),
    ]
    with session_scope(home.url) as session:
        run = session.get(DagRun, run_pk)
        assert run is not None and run.note_user == "user"


def test_tries_answer_each_try_with_its_values(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    run_pk = home.trigger("etl", run_id="r1")
    (queued,) = home.schedule(run_pk)
    home.end_try(queued.ti_id, TI.SUCCESS, hostname="h1")
    user = as_role("user")
    body = {"dry_run": False, "only_failed": False, "task_ids": ["extract"], "dag_run_id": "r1"}
    assert api.post("/api/v2/dags/etl/clearTaskInstances", json=body, headers=user).is_success
    (queued,) = home.schedule(run_pk)
    home.end_try(queued.ti_id, TI.FAILED, hostname="h2")
    store = f"{RUNS}/r1/taskInstances/extract/state-store/cursor"
    assert api.put(store, json={"value": {"page": 7}}, headers=user).status_code == 204
    (kept,) = _events(api, as_role, event="set_task_state_store")
    assert (kept["owner"], kept["task_id"]) == ("user", "extract")
    assert json.loads(str(kept["extra"]))["state_key"] == "cursor" and "7" not in str(kept["extra"])
    tries = api.get(f"{RUNS}/r1/taskInstances/extract/tries", headers=as_role("viewer")).json()
    conforms("TaskInstanceHistoryCollectionResponse", tries)
    rows = [TaskInstanceHistoryResponse(**t) for t in tries["task_instances"]]
    assert [(t.try_number, t.state, t.hostname) for t in rows] == [
        (1, "success", "h1"),
        (2, "failed", "h2"),
    ]
    one = api.get(f"{RUNS}/r1/taskInstances/extract/tries/1", headers=as_role("viewer")).json()
    assert (one["state"], one["hostname"]) == ("success", "h1")
    none = api.get(f"{RUNS}/r1/taskInstances/extract/tries/3", headers=as_role("viewer"))
    assert none.status_code == 404
    cleared = _events(api, as_role, event="post_clear_task_instances")
    assert [(e["owner"], e["task_id"], e["try_number"]) for e in cleared] == [
        ("user", "extract", 1)
    ]


def test_a_clear_of_many_mapped_instances_is_one_event_per_task() -> None:
    def ti(task_id: str, map_index: int) -> TaskInstance:
        return TaskInstance(
            dag_id="fan", run_id="r1", task_id=task_id, map_index=map_index, try_number=1
        )

    abouts = about_tis([ti("double", n) for n in range(2000)] + [ti("extract", -1)], None)
    assert [(a.task_id, a.map_index, a.try_number) for a in abouts] == [
        ("double", None, None),
        ("extract", -1, 1),
    ]


def test_bulk_run_and_task_instance_actions_are_recorded_one_event_a_run(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    user = as_role("user")
    for run_id in ("b1", "b2", "b3"):
        assert api.post(RUNS, json={"dag_run_id": run_id}, headers=user).status_code == 200
    marked = {
        "action": "update",
        "entities": [{"dag_run_id": r, "state": "failed"} for r in ("b1", "b2")],
    }
    deleted = {"action": "delete", "entities": ["b3"]}
    reply = api.patch(RUNS, json={"actions": [marked, deleted]}, headers=user)
    assert reply.status_code == 200, reply.text
    clear = {"dry_run": False, "dag_runs": [{"dag_run_id": "b1"}, {"dag_run_id": "b2"}]}
    reply = api.post("/api/v2/dags/etl/clearDagRuns", json=clear, headers=user)
    assert reply.status_code == 200, reply.text
    tis = {"action": "update", "entities": [{"task_id": "extract", "new_state": "success"}]}
    reply = api.patch(f"{RUNS}/b1/taskInstances", json={"actions": [tis]}, headers=user)
    assert reply.status_code == 200 and reply.json()["update"]["success"], reply.text
    dry = {"dry_run": True, "dag_runs": [{"dag_run_id": "b1"}]}
    assert api.post("/api/v2/dags/etl/clearDagRuns", json=dry, headers=user).status_code == 200

    events = _events(api, as_role, order_by="id", included_events=[
        "patch_dag_run", "delete_dag_run", "clear_dag_run", "patch_task_instance",
    ])  # fmt: skip
    done = [(e["event"], e["run_id"], e.get("task_id"), e["owner"]) for e in events]
    assert done == [
        ("patch_dag_run", "b1", None, "user"),
        ("patch_dag_run", "b2", None, "user"),
        ("delete_dag_run", "b3", None, "user"),
        ("clear_dag_run", "b1", None, "user"),
        ("clear_dag_run", "b2", None, "user"),
        ("patch_task_instance", "b1", "extract", "user"),
    ]  # a dry run changes nothing and records nothing
    extras = [json.loads(str(e["extra"])) for e in events]
    assert all(extra["bulk"] is True and extra["origin"] == "api" for extra in extras)
    assert extras[0]["state"] == "failed" and extras[3]["only_failed"] is False
    assert extras[5]["new_state"] == "success"
