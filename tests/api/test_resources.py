"""Pools, variables, connections and import errors through the API; secrets never come back."""

from __future__ import annotations

import json
from collections.abc import Callable

from fastapi.testclient import TestClient

from state.core.db import session_scope
from state.records.connections import get_connection, get_variable
from tests.api.conftest import conforms
from tests.state.harness import Home

Headers = Callable[[str], dict[str, str]]
V2 = "/api/v2"


def test_pools_created_changed_listed_deleted(api: TestClient, as_role: Headers) -> None:
    op = as_role("op")
    created = api.post(f"{V2}/pools", json={"name": "etl", "slots": 3}, headers=op)
    assert created.status_code == 201
    conforms("PoolResponse", created.json())
    assert api.post(f"{V2}/pools", json={"name": "etl", "slots": 3}, headers=op).status_code == 409
    assert api.patch(f"{V2}/pools/etl", json={"slots": 5}, headers=op).json()["slots"] == 5
    listed = api.get(f"{V2}/pools", headers=as_role("viewer")).json()
    conforms("PoolCollectionResponse", listed)
    assert [(p["name"], p["open_slots"]) for p in listed["pools"]] == [
        ("default_pool", 128),
        ("etl", 5),
    ]
    negative = api.post(f"{V2}/pools", json={"name": "x", "slots": -1}, headers=op)
    assert negative.status_code == 422
    assert api.delete(f"{V2}/pools/etl", headers=op).status_code == 204
    assert api.get(f"{V2}/pools/etl", headers=op).status_code == 404
    default = api.delete(f"{V2}/pools/default_pool", headers=op)
    assert default.status_code == 400 and "cannot be deleted" in default.json()["detail"]


def test_variables_and_their_secrets(api: TestClient, as_role: Headers, home: Home) -> None:
    op = as_role("op")
    assert (
        api.post(f"{V2}/variables", json={"key": "region", "value": "eu"}, headers=op).status_code
        == 201
    )
    api.post(f"{V2}/variables", json={"key": "limits", "value": {"rows": 10}}, headers=op)
    api.post(f"{V2}/variables", json={"key": "db_password", "value": "hunter2"}, headers=op)
    listed = api.get(f"{V2}/variables", headers=as_role("viewer")).json()
    conforms("VariableCollectionResponse", listed)
    values = {v["key"]: v["value"] for v in listed["variables"]}
    assert values == {"db_password": "***", "limits": '{"rows": 10}', "region": "eu"}
    assert "hunter2" not in json.dumps(listed)
    with session_scope(home.url) as session:
        assert get_variable(session, "db_password").value == "hunter2"  # type: ignore[union-attr]
    patched = api.patch(f"{V2}/variables/region", json={"key": "region", "value": "us"}, headers=op)
    assert patched.json()["value"] == "us"
    assert api.delete(f"{V2}/variables/region", headers=op).status_code == 204
    assert api.get(f"{V2}/variables/region", headers=op).status_code == 404


def test_connection_passwords_are_written_never_read(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    op = as_role("op")
    body = {
        "connection_id": "warehouse",
        "conn_type": "postgres",
        "host": "db.internal",
        "login": "etl",
        "password": "s3cret",
        "port": 5432,
        "extra": json.dumps({"sslmode": "require", "api_key": "k-123"}),
    }
    created = api.post(f"{V2}/connections", json=body, headers=op)
    assert created.status_code == 201, created.text
    conforms("ConnectionResponse", created.json())
    for reply in (
        created,
        api.get(f"{V2}/connections/warehouse", headers=as_role("viewer")),
        api.get(f"{V2}/connections", headers=as_role("viewer")),
    ):
        assert "s3cret" not in reply.text and "k-123" not in reply.text
    shown = api.get(f"{V2}/connections/warehouse", headers=op).json()
    assert shown["password"] == "***"
    assert json.loads(shown["extra"]) == {"sslmode": "require", "api_key": "***"}
    api.patch(
        f"{V2}/connections/warehouse", json={**body, "password": "***", "host": "db2"}, headers=op
    )
    with session_scope(home.url) as session:
        stored = get_connection(session, "warehouse")
        assert (stored.password, stored.host) == ("s3cret", "db2")  # type: ignore[union-attr]
    bad = api.post(
        f"{V2}/connections", json={**body, "connection_id": "x", "extra": "[1]"}, headers=op
    )
    assert bad.status_code == 400 and bad.json()["detail"] == "extra must be a JSON object"


def test_import_errors_are_listed_and_read(api: TestClient, as_role: Headers, home: Home) -> None:
    home.write_dag("raise RuntimeError('no good')\n", name="broken.py")
    home.sync()
    listed = api.get(f"{V2}/importErrors", headers=as_role("viewer")).json()
    conforms("ImportErrorCollectionResponse", listed)
    [error] = listed["import_errors"]
    assert error["filename"].endswith("broken.py") and "no good" in error["stack_trace"]
    one = api.get(f"{V2}/importErrors/{error['import_error_id']}", headers=as_role("viewer"))
    assert one.json() == error
    assert api.get(f"{V2}/importErrors/1", headers=as_role("viewer")).status_code == 404


def test_every_list_is_bounded(api: TestClient, as_role: Headers, home: Home) -> None:
    for number in range(3):
        home.trigger("etl", run_id=f"r{number}")
    page = api.get(f"{V2}/dags/etl/dagRuns", params={"limit": 10**9}, headers=as_role("viewer"))
    assert page.status_code == 200 and page.json()["total_entries"] == 3
    reply = api.get(f"{V2}/dags/etl/dagRuns", params={"limit": 2}, headers=as_role("viewer"))
    assert len(reply.json()["dag_runs"]) == 2 and reply.json()["total_entries"] == 3
    negative = api.get(f"{V2}/dags", params={"limit": -1}, headers=as_role("viewer"))
    assert negative.status_code == 422
