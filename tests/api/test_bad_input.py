"""Bad requests: one clear 4xx with a message, and nothing changed in the store."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from api import create_app
from tests.state.harness import Home

Headers = Callable[[str], dict[str, str]]
RUNS = "/api/v2/dags/etl/dagRuns"


def _run_count(api: TestClient, headers: dict[str, str]) -> int:
    return int(api.get(RUNS, headers=headers).json()["total_entries"])


def test_bad_conf_unknown_names_and_bad_json(api: TestClient, as_role: Headers) -> None:
    user = as_role("user")
    cases = [
        (api.post(RUNS, json={"logical_date": None, "conf": [1]}, headers=user), 422, "conf"),
        (api.post(RUNS, json={"logical_date": None, "nonsense": 1}, headers=user), 422, "nonsense"),
        (
            api.post(
                RUNS, content=b"{not json", headers={**user, "content-type": "application/json"}
            ),
            422,
            "json",
        ),
        (
            api.post("/api/v2/dags/nope/dagRuns", json={"logical_date": None}, headers=user),
            404,
            "nope",
        ),
        (api.get(f"{RUNS}/missing", headers=user), 404, "missing"),
        (api.get(f"{RUNS}/missing/taskInstances/extract", headers=user), 404, "missing"),
    ]
    for reply, code, words in cases:
        assert reply.status_code == code, reply.text
        assert words in reply.text.lower()
    assert _run_count(api, user) == 0


def test_an_oversized_body_is_413_before_it_is_read(
    home: Home, monkeypatch, as_role: Headers
) -> None:
    monkeypatch.setattr(home.settings, "api_max_body_bytes", 1000)
    with TestClient(create_app(home.settings)) as small:
        user = as_role("user")
        reply = small.post(
            RUNS, json={"logical_date": None, "conf": {"x": "y" * 2000}}, headers=user
        )
        assert reply.status_code == 413
        assert reply.json() == {"detail": "the request body is over 1000 bytes"}
        assert _run_count(small, user) == 0


def test_the_openapi_document_names_airflows_paths(api: TestClient) -> None:
    document = api.get("/openapi.json").json()
    for path in (
        "/api/v2/dags/{dag_id}/dagRuns/{dag_run_id}/taskInstances/{task_id}/logs/{try_number}",
        "/api/v2/dags/{dag_id}/clearTaskInstances",
        "/api/v2/dags/{dag_id}/dagRuns/{dag_run_id}/taskInstances/{task_id}/state-store/{key}",
        "/auth/token",
    ):
        assert path in document["paths"], path
    assert document["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"


def test_trigger_fields_tradewind_has_not_are_refused(api: TestClient, as_role: Headers) -> None:
    user = as_role("user")
    for field, value in (
        ("partition_key", "p1"),
        ("run_after", "2026-12-01T00:00:00Z"),
    ):
        reply = api.post(RUNS, json={"logical_date": None, field: value}, headers=user)
        assert reply.status_code == 400
        assert reply.json()["detail"] == f"{field} is not supported by Tradewind: leave it null"
    assert _run_count(api, user) == 0


def test_a_value_the_store_cannot_hold_is_400_without_the_statement(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    body = {"key": "k\x00", "value": "secret-value"}
    reply = api.post("/api/v2/variables", json=body, headers=as_role("op"))
    if home.url.startswith("sqlite"):
        assert reply.status_code == 201  # SQLite keeps a NUL in text
        return
    assert reply.status_code == 400
    assert reply.json()["detail"].startswith("the store cannot hold a value of this request: ")
    assert "SELECT" not in reply.text and "secret-value" not in reply.text
