"""Task instances through the API: listed, read, mapped, tries, logs, dependencies, marked,
cleared; and their XComs and state values."""

from __future__ import annotations

import json
from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy import select, update

from state.core.db import session_scope
from state.core.models import DagRun, TaskInstance, TaskStateValue, XCom, utcnow
from tests.api.conftest import conforms
from tests.state.harness import TI, Home
from tradewind.settings import log_path

Headers = Callable[[str], dict[str, str]]
RUN = "/api/v2/dags/etl/dagRuns/r1"


def _run(home: Home, dag_id: str = "etl") -> int:
    run_pk = home.trigger(dag_id, run_id="r1")
    home.schedule(run_pk)
    return run_pk


def _finish_extract(home: Home, run_pk: int, state: TI = TI.SUCCESS) -> None:
    """Play the supervisor of extract's first try, its XCom, a state value and its log."""
    ti = home.ti(run_pk, "extract")
    with session_scope(home.url) as session:
        session.execute(
            update(TaskInstance).where(TaskInstance.id == ti.id).values(try_number=1, hostname="h1")
        )
    home.end_try(ti.id, state, start_date=utcnow(), end_date=utcnow())
    with session_scope(home.url) as session:
        key = {"dag_id": "etl", "run_id": "r1", "task_id": "extract", "map_index": -1}
        session.add(XCom(**key, key="return_value", value=json.dumps([1, 2, 3])))
        session.add(TaskStateValue(**key, key="cursor", value=json.dumps({"page": 4})))
    path = log_path(home.settings.logs_folder, "etl", "r1", "extract", -1, 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("starting\nextracted 3 rows\n")


def test_task_instances_of_a_run(api: TestClient, as_role: Headers, home: Home) -> None:
    _finish_extract(home, _run(home))
    listed = api.get(f"{RUN}/taskInstances", headers=as_role("viewer")).json()
    conforms("TaskInstanceCollectionResponse", listed)
    states = {ti["task_id"]: ti["state"] for ti in listed["task_instances"]}
    assert states == {"extract": "success", "load": None}  # Airflow's "none" is null
    only = api.get(
        f"{RUN}/taskInstances", params={"state": ["none"]}, headers=as_role("viewer")
    ).json()
    assert [ti["task_id"] for ti in only["task_instances"]] == ["load"]
    one = api.get(f"{RUN}/taskInstances/extract", headers=as_role("viewer")).json()
    conforms("TaskInstanceResponse", one)
    assert (one["try_number"], one["hostname"], one["max_tries"]) == (1, "h1", 1)
    missing = api.get(f"{RUN}/taskInstances/nope", headers=as_role("viewer"))
    assert missing.status_code == 404
    assert missing.json()["detail"] == "run 'r1' of DAG 'etl' has no task 'nope'"


def test_mapped_task_instances(api: TestClient, as_role: Headers, home: Home) -> None:
    run_pk = home.trigger("fan", run_id="r1")
    with session_scope(home.url) as session:
        run = session.get_one(DagRun, run_pk)
        session.execute(
            update(TaskInstance)
            .where(TaskInstance.run_id == run.run_id, TaskInstance.task_id == "double")
            .values(map_index=0)
        )
        for index in (1, 2):
            session.add(TaskInstance(dag_id="fan", run_id="r1", task_id="double", map_index=index))
        # Its map_index_template, as the try rendered it (worker/task_runner/map_index_names.py).
        session.add(TaskInstance(dag_id="fan", run_id="r1", task_id="double", map_index=3,
                                 rendered_map_index="file-c.csv"))  # fmt: skip
    base = "/api/v2/dags/fan/dagRuns/r1/taskInstances/double"
    mapped = api.get(f"{base}/listMapped", headers=as_role("viewer")).json()
    conforms("TaskInstanceCollectionResponse", mapped)
    assert [ti["map_index"] for ti in mapped["task_instances"]] == [0, 1, 2, 3]
    second = api.get(f"{base}/1", headers=as_role("viewer")).json()
    assert (second["map_index"], second["rendered_map_index"]) == (1, "1")
    named = api.get(f"{base}/3", headers=as_role("viewer")).json()
    assert (named["map_index"], named["rendered_map_index"]) == (3, "file-c.csv")
    assert api.get(f"{base}/7", headers=as_role("viewer")).status_code == 404


def test_tries_and_the_log_of_a_try(api: TestClient, as_role: Headers, home: Home) -> None:
    _finish_extract(home, _run(home))
    tries = api.get(f"{RUN}/taskInstances/extract/tries", headers=as_role("viewer")).json()
    conforms("TaskInstanceHistoryCollectionResponse", tries)
    assert [(t["try_number"], t["state"]) for t in tries["task_instances"]] == [(1, "success")]
    log = api.get(f"{RUN}/taskInstances/extract/logs/1", headers=as_role("viewer")).json()
    conforms("TaskInstancesLogResponse", log)
    assert [line["event"] for line in log["content"]] == ["starting", "extracted 3 rows"]
    text = api.get(
        f"{RUN}/taskInstances/extract/logs/1",
        headers={**as_role("viewer"), "Accept": "text/plain"},
    )
    assert text.text == "starting\nextracted 3 rows\n"
    later = api.get(f"{RUN}/taskInstances/extract/logs/2", headers=as_role("viewer"))
    assert later.status_code == 404 and "has had 1 tries, not 2" in later.json()["detail"]


def test_dependencies_say_why_a_task_waits(api: TestClient, as_role: Headers, home: Home) -> None:
    _run(home)
    deps = api.get(f"{RUN}/taskInstances/load/dependencies", headers=as_role("viewer")).json()
    conforms("TaskDependencyCollectionResponse", deps)
    assert [d["name"] for d in deps["dependencies"]] == ["Trigger Rule"]
    assert "0 of 1 upstream" in deps["dependencies"][0]["reason"]
    api.patch("/api/v2/dags/etl", json={"is_paused": True}, headers=as_role("user"))
    deps = api.get(f"{RUN}/taskInstances/load/dependencies", headers=as_role("viewer")).json()
    assert [d["name"] for d in deps["dependencies"]] == ["DAG Not Paused", "Trigger Rule"]


def test_marking_a_task_instance_and_its_downstream(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    run_pk = _run(home)
    body = {"new_state": "failed", "include_downstream": True}
    assert (
        api.patch(f"{RUN}/taskInstances/extract", json=body, headers=as_role("viewer")).status_code
        == 403
    )
    marked = api.patch(f"{RUN}/taskInstances/extract", json=body, headers=as_role("user")).json()
    conforms("TaskInstanceCollectionResponse", marked)
    assert {ti["task_id"]: ti["state"] for ti in marked["task_instances"]} == {
        "extract": "failed",
        "load": "failed",
    }
    assert home.states(run_pk) == {"extract": TI.FAILED, "load": TI.FAILED}
    bad = api.patch(
        f"{RUN}/taskInstances/extract", json={"new_state": "running"}, headers=as_role("user")
    )
    assert bad.status_code == 422
    past = api.patch(
        f"{RUN}/taskInstances/extract",
        json={"new_state": "success", "include_past": True},
        headers=as_role("user"),
    )
    assert past.status_code == 200  # the only run: its past is itself
    assert [ti["task_id"] for ti in past.json()["task_instances"]] == ["extract"]
    assert home.states(run_pk) == {"extract": TI.SUCCESS, "load": TI.FAILED}


def test_clear_task_instances_only_failed_by_default(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    run_pk = _run(home)
    _finish_extract(home, run_pk, TI.FAILED)
    url = "/api/v2/dags/etl/clearTaskInstances"
    dry = api.post(url, json={"dag_run_id": "r1"}, headers=as_role("user")).json()
    assert [ti["task_id"] for ti in dry["task_instances"]] == ["extract"]
    assert home.states(run_pk)["extract"] == TI.FAILED
    done = api.post(url, json={"dag_run_id": "r1", "dry_run": False}, headers=as_role("user"))
    conforms("TaskInstanceCollectionResponse", done.json())
    assert home.states(run_pk)["extract"] == TI.NONE
    assert home.xcoms(run_pk) == {}  # a clear discards the XComs
    unknown = api.post(url, json={"task_ids": ["nope"]}, headers=as_role("user"))
    assert unknown.status_code == 404 and "has no task 'nope'" in unknown.json()["detail"]


def test_xcom_entries_list_and_read(api: TestClient, as_role: Headers, home: Home) -> None:
    _finish_extract(home, _run(home))
    base = f"{RUN}/taskInstances/extract/xcomEntries"
    listed = api.get(base, headers=as_role("viewer")).json()
    conforms("XComCollectionResponse", listed)
    assert [x["key"] for x in listed["xcom_entries"]] == ["return_value"]
    entry = api.get(f"{base}/return_value", headers=as_role("viewer")).json()
    assert entry["value"] == [1, 2, 3]
    text = api.get(f"{base}/return_value", params={"stringify": True}, headers=as_role("viewer"))
    assert text.json()["value"] == "[1, 2, 3]"
    assert api.get(f"{base}/other", headers=as_role("viewer")).status_code == 404


def test_the_state_store_read_and_deleted(api: TestClient, as_role: Headers, home: Home) -> None:
    _finish_extract(home, _run(home))
    base = f"{RUN}/taskInstances/extract/state-store"
    listed = api.get(base, headers=as_role("viewer")).json()
    conforms("TaskStateStoreCollectionResponse", listed)
    assert [(v["key"], v["value"]) for v in listed["task_state_store"]] == [("cursor", {"page": 4})]
    assert api.get(f"{base}/cursor", headers=as_role("viewer")).json()["value"] == {"page": 4}
    assert api.delete(f"{base}/cursor", headers=as_role("viewer")).status_code == 403
    assert api.delete(f"{base}/cursor", headers=as_role("user")).status_code == 204
    assert api.get(f"{base}/cursor", headers=as_role("viewer")).status_code == 404
    with session_scope(home.url) as session:
        assert session.scalars(select(TaskStateValue)).all() == []


def test_the_state_store_written_through_the_api(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    _finish_extract(home, _run(home))
    base = f"{RUN}/taskInstances/extract/state-store"
    put = api.put(f"{base}/limit", json={"value": {"rows": 9}}, headers=as_role("user"))
    assert put.status_code == 204
    assert api.get(f"{base}/limit", headers=as_role("viewer")).json()["value"] == {"rows": 9}
    later = "2099-01-01T00:00:00Z"
    api.put(f"{base}/limit", json={"value": 1, "expires_at": later}, headers=as_role("user"))
    patched = api.patch(f"{base}/limit", json={"value": 2}, headers=as_role("user")).json()
    assert (patched["value"], patched["expires_at"]) == (2, "2099-01-01T00:00:00Z")
    assert api.put(f"{base}/x", json={"value": 1}, headers=as_role("viewer")).status_code == 403
    missing = api.patch(f"{base}/nope", json={"value": 1}, headers=as_role("user"))
    assert missing.status_code == 404


def test_one_try_and_the_sign_in_redirects(api: TestClient, as_role: Headers, home: Home) -> None:
    _finish_extract(home, _run(home))
    one = api.get(f"{RUN}/taskInstances/extract/tries/1", headers=as_role("viewer")).json()
    conforms("TaskInstanceHistoryResponse", one)
    assert (one["try_number"], one["state"]) == (1, "success")
    assert (
        api.get(f"{RUN}/taskInstances/extract/tries/2", headers=as_role("viewer")).status_code
        == 404
    )
    login = api.get("/api/v2/auth/login", params={"next": "/dags"}, follow_redirects=False)
    assert login.status_code == 307 and login.headers["location"] == "/auth/login?next=/dags"


def test_pages_across_runs_never_overlap_and_their_order_is_served_in_order(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    """Task instances of several runs tie on (map index, task id): ``id`` breaks the tie, so
    paging one at a time lists each once; a run-date ordering still reads the runs."""
    for index in range(3):
        home.trigger("etl", run_id=f"p{index}")
    every = "/api/v2/dags/etl/dagRuns/~/taskInstances"
    seen = []
    for offset in range(6):
        page = api.get(every, params={"limit": 1, "offset": offset}, headers=as_role("viewer"))
        body = page.json()
        assert body["total_entries"] == 6
        seen += [(ti["dag_run_id"], ti["task_id"]) for ti in body["task_instances"]]
    assert len(set(seen)) == 6
    assert [task_id for _run, task_id in seen] == ["extract"] * 3 + ["load"] * 3
    newest = api.get(every, params={"order_by": "-run_after"}, headers=as_role("viewer")).json()
    assert [ti["dag_run_id"] for ti in newest["task_instances"]][:2] == ["p2", "p2"]
    bad = api.get(every, params={"order_by": "nope"}, headers=as_role("viewer"))
    assert bad.status_code == 400 and "cannot order by 'nope'" in bad.text


def test_a_deferred_task_instance_is_listed_deferred_and_says_why_it_waits(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    run_pk = _run(home)
    ti = home.ti(run_pk, "extract")
    home.end_try(ti.id, TI.DEFERRED, start_date=utcnow())
    one = api.get(f"{RUN}/taskInstances/extract", headers=as_role("viewer")).json()
    conforms("TaskInstanceResponse", one)
    assert one["state"] == "deferred"
    only = api.get(
        f"{RUN}/taskInstances", params={"state": ["deferred"]}, headers=as_role("viewer")
    ).json()
    assert [t["task_id"] for t in only["task_instances"]] == ["extract"]
    why = api.get(f"{RUN}/taskInstances/extract/dependencies", headers=as_role("viewer")).json()
    assert [d["name"] for d in why["dependencies"]] == ["Task Deferred"]
