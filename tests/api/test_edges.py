"""What a careless or hostile client sends gets a one-line 4xx, never a 500, and every answer
carries the security headers: ids, log tokens, deep or unencodable JSON, unknown fields,
descriptions kept, the API docs without a CDN."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api import create_app
from api.headers import SECURITY_HEADERS
from tests.api.test_task_instances import RUN, _finish_extract, _run
from tests.state.harness import Home

Headers = Callable[[str], dict[str, str]]
RUNS = "/api/v2/dags/etl/dagRuns"
TEMPLATES = Path(__file__).parents[2] / "api" / "templates"


@pytest.mark.parametrize("run_id", ["..", "a/b", "", ".", "../x"])
def test_a_run_id_that_could_leave_its_log_folder_is_400(
    api: TestClient, as_role: Headers, run_id: str
) -> None:
    user = as_role("user")
    reply = api.post(RUNS, json={"logical_date": None, "dag_run_id": run_id}, headers=user)
    assert reply.status_code == 400, reply.text
    detail = reply.json()["detail"]
    assert "run id" in detail and "\n" not in detail
    assert api.get(RUNS, headers=user).json()["total_entries"] == 0


def test_a_log_token_past_any_file_offset_is_400(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    _finish_extract(home, _run(home))
    log = f"{RUN}/taskInstances/extract/logs/1"
    for token in (str(2**63), str(2**40 + 1), "9" * 5000, "²", "-1"):
        reply = api.get(log, params={"token": token}, headers=as_role("viewer"))
        assert reply.status_code == 400, (token[:20], reply.text)
        assert "is not one this server gave" in reply.json()["detail"]
    # An offset inside the log is one this server gives: read from there.
    fine = api.get(log, params={"token": "0"}, headers=as_role("viewer"))
    assert fine.status_code == 200 and fine.json()["content"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b'{"key": "k", "value": "\\ud800"}', "lone UTF-16 surrogate \\ud800"),
        (b'{"key": "\\udc00", "value": "v"}', "lone UTF-16 surrogate \\udc00"),
        (b'{"key": "k", "value": "\xed\xa0\x80"}', "not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "nests deeper than 64 levels"),
    ],
)
def test_bodies_no_parser_should_see_are_400_on_any_route(
    api: TestClient, as_role: Headers, body: bytes, words: str
) -> None:
    json_type = {"content-type": "application/json"}
    for path, headers in (
        ("/api/v2/variables", {**as_role("op"), **json_type}),
        ("/auth/token", json_type),  # anonymous
        (RUNS, {**as_role("user"), **json_type}),
    ):
        reply = api.post(path, content=body, headers=headers)
        assert reply.status_code == 400, (path, reply.text)
        assert words in reply.json()["detail"]
    assert api.get("/api/v2/variables", headers=as_role("op")).json()["total_entries"] == 0


def test_a_surrogate_pair_and_an_escaped_backslash_u_are_text(
    api: TestClient, as_role: Headers
) -> None:
    op = {**as_role("op"), "content-type": "application/json"}
    body = b'{"key": "k", "value": "\\ud83d\\ude00 and \\\\ud800"}'
    reply = api.post("/api/v2/variables", content=body, headers=op)
    assert reply.status_code == 201, reply.text
    assert reply.json()["value"] == "\U0001f600 and \\ud800"


def test_descriptions_are_kept_and_returned(api: TestClient, as_role: Headers) -> None:
    op = as_role("op")
    made = [
        api.post(
            "/api/v2/variables", json={"key": "v", "value": "1", "description": "dv"}, headers=op
        ),
        api.post(
            "/api/v2/connections",
            json={"connection_id": "c", "conn_type": "http", "description": "dc"},
            headers=op,
        ),
        api.post(
            "/api/v2/pools",
            json={"name": "p", "slots": 2, "description": "dp", "include_deferred": False},
            headers=op,
        ),
    ]
    assert [reply.status_code for reply in made] == [201, 201, 201], [r.text for r in made]
    assert [reply.json()["description"] for reply in made] == ["dv", "dc", "dp"]
    assert api.get("/api/v2/variables/v", headers=op).json()["description"] == "dv"
    assert api.get("/api/v2/connections/c", headers=op).json()["description"] == "dc"
    assert api.get("/api/v2/pools", headers=op).json()["pools"][-1]["description"] == "dp"
    slots_only = api.patch("/api/v2/pools/p", json={"slots": 3}, headers=op).json()
    assert (slots_only["slots"], slots_only["description"]) == (3, "dp")
    renamed = api.patch("/api/v2/pools/p", json={"description": "new"}, headers=op).json()
    assert (renamed["slots"], renamed["description"]) == (3, "new")


def test_unknown_fields_are_422_and_unsupported_ones_400(api: TestClient, as_role: Headers) -> None:
    op = as_role("op")
    unknown = api.post("/api/v2/pools", json={"name": "p", "slots": 1, "colour": "red"}, headers=op)
    assert unknown.status_code == 422 and "colour" in unknown.text
    for path, body, field in (
        ("/api/v2/pools", {"name": "p", "slots": 1, "include_deferred": True}, "include_deferred"),
        ("/api/v2/pools", {"name": "p", "slots": 1, "team_name": "t"}, "team_name"),
        ("/api/v2/variables", {"key": "k", "value": "v", "team_name": "t"}, "team_name"),
        (
            "/api/v2/connections",
            {"connection_id": "c", "conn_type": "x", "team_name": "t"},
            "team_name",
        ),
    ):
        reply = api.post(path, json=body, headers=op)
        assert reply.status_code == 400, reply.text
        assert reply.json()["detail"] == f"{field} is not supported by Tradewind: leave it out"
    assert api.get("/api/v2/pools/p", headers=op).status_code == 404


def test_every_answer_carries_the_security_headers(
    api: TestClient, as_role: Headers, home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    replies = [
        api.get("/api/v2/dags", headers=as_role("viewer")),
        api.get("/api/v2/dags"),  # 401
        api.get("/api/v2/dags/nope", headers=as_role("viewer")),  # 404
        api.get("/dags", follow_redirects=False),  # 303 to the sign-in page
        api.get("/auth/login"),
        api.get("/static/tradewind.js"),
        api.get("/docs"),
        api.get("/openapi.json"),
        api.post("/auth/token", content=b"[" * 100, headers={"content-type": "application/json"}),
    ]
    monkeypatch.setattr(home.settings, "api_max_body_bytes", 10)
    with TestClient(create_app(home.settings)) as small:
        replies.append(small.post("/auth/token", json={"username": "x" * 20}))  # 413
    assert len({reply.status_code for reply in replies}) >= 6
    for reply in replies:
        for name, value in SECURITY_HEADERS.items():
            assert reply.headers.get(name) == value, (reply.request.url, name)
    policy = SECURITY_HEADERS["Content-Security-Policy"]
    assert "script-src 'self';" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]


@pytest.mark.parametrize("path", ["/docs", "/redoc"])
def test_the_api_docs_load_nothing_from_another_host(api: TestClient, path: str) -> None:
    page = api.get(path)
    assert page.status_code == 200
    sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert sources and all(s.startswith("http://testserver/") for s in sources), sources
    for source in sources:
        assert api.get(source).status_code == 200, source
    assert "<script>" not in page.text


def test_no_template_runs_inline_script() -> None:
    for template in TEMPLATES.rglob("*.html"):
        text = template.read_text()
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", text), template
        assert not re.search(r"\son[a-z]+\s*=", text), template
        assert "javascript:" not in text, template


def test_an_unknown_query_parameter_is_422_naming_it(api: TestClient, as_role: Headers) -> None:
    reply = api.get(RUNS, params={"stat": "failed"}, headers=as_role("viewer"))
    assert reply.status_code == 422, reply.text
    assert reply.json()["detail"][0]["msg"] == "unknown query parameter 'stat'"
    known = api.get(RUNS, params={"state": "failed"}, headers=as_role("viewer"))
    assert known.status_code == 200


def test_the_openapi_document_declares_each_routes_refusals(api: TestClient) -> None:
    paths = api.get("/openapi.json").json()["paths"]

    def codes(path: str, method: str) -> set[str]:
        return {code for code in paths[path][method]["responses"] if code.startswith("4")}

    assert codes("/api/v2/variables/{variable_key}", "get") == {"400", "401", "403", "404", "422"}
    assert codes("/api/v2/variables", "post") >= {"400", "401", "403", "409", "413", "422"}
    assert codes("/auth/token", "post") >= {"400", "401", "413", "422"}
    assert "401" not in codes("/api/v2/monitor/health", "get")
    refusal = paths["/api/v2/pools/{pool_name}"]["get"]["responses"]["404"]
    schema = refusal["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/HTTPExceptionResponse"}
