"""Signing in, tokens, roles, the session cookie and CSRF on the login form."""

from __future__ import annotations

import datetime as dt
import gc
import re
from collections.abc import Callable

import jwt
from fastapi.testclient import TestClient

from api.app import SESSION_COOKIE
from api.security import TokenHolder, Tokens
from state.core.db import session_scope
from state.core.models import User
from tests.api.conftest import PASSWORD
from tests.state.harness import Home

Headers = Callable[[str], dict[str, str]]


def test_no_token_is_401_with_a_message(api: TestClient) -> None:
    reply = api.get("/api/v2/dags")
    assert reply.status_code == 401
    assert "not authenticated" in reply.json()["detail"]
    assert reply.headers["www-authenticate"] == "Bearer"


def test_health_and_version_need_no_token(api: TestClient) -> None:
    health = api.get("/api/v2/monitor/health")
    assert health.status_code == 200
    assert health.json()["metadatabase"]["status"] == "healthy"
    assert api.get("/api/v2/version").json()["version"]


def test_a_token_from_a_password_opens_the_api(api: TestClient, as_role: Headers) -> None:
    reply = api.get("/api/v2/dags", headers=as_role("viewer"))
    assert reply.status_code == 200
    assert {d["dag_id"] for d in reply.json()["dags"]} == {"etl", "fan", "solo"}


def test_a_token_can_be_asked_for_with_a_form(api: TestClient) -> None:
    reply = api.post("/auth/token", data={"username": "admin", "password": PASSWORD})
    assert reply.status_code == 201
    assert reply.json()["access_token"]


def test_a_wrong_password_or_unknown_user_is_401(api: TestClient) -> None:
    for username, password in (("admin", "wrong"), ("nobody", PASSWORD)):
        reply = api.post("/auth/token", json={"username": username, "password": password})
        assert reply.status_code == 401
        assert reply.json() == {"detail": "invalid username or password"}


def test_a_malformed_token_request_is_422(api: TestClient) -> None:
    reply = api.post("/auth/token", content=b"not json", headers={"content-type": "text/plain"})
    assert reply.status_code == 422
    assert "username" in reply.json()["detail"]
    extra = {"username": "admin", "password": "x", "scope": "admin"}
    assert api.post("/auth/token", json=extra).status_code == 422  # refused, never dropped


def holder_of(home: Home, username: str) -> TokenHolder:
    """Whom a token for ``username`` names now (id, name, token version), from the store."""
    with session_scope(home.url) as session:
        user = session.query(User).filter_by(username=username).one()
        return TokenHolder(user.id, user.username, user.token_version)


def test_a_bad_or_expired_or_foreign_token_is_401(api: TestClient, home: Home) -> None:
    key = api.app.state.tradewind.tokens.key  # type: ignore[attr-defined]
    admin = holder_of(home, "admin")
    expired = Tokens(key, dt.timedelta(seconds=-10)).issue(admin)
    foreign = Tokens("another fleet's key, 32 characters or more", dt.timedelta(hours=1))
    name_only = jwt.encode({"sub": "admin", "exp": 2**40}, key, algorithm="HS256")
    for token, words in (
        ("garbage", "invalid token"),
        (expired, "expired"),
        (foreign.issue(admin), "invalid token"),
        (name_only, "invalid token"),
    ):
        reply = api.get("/api/v2/dags", headers={"Authorization": f"Bearer {token}"})
        assert reply.status_code == 401, token
        assert words in reply.json()["detail"]


def test_a_deleted_users_token_stops_working(api: TestClient, as_role: Headers, home: Home) -> None:
    headers = as_role("op")
    with session_scope(home.url) as session:
        session.query(User).filter_by(username="op").delete()
    reply = api.get("/api/v2/dags", headers=headers)
    assert reply.status_code == 401
    assert "no longer exists" in reply.json()["detail"]


def test_tokens_are_signed_and_expire(api: TestClient, as_role: Headers) -> None:
    token = as_role("viewer")["Authorization"].split()[1]
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["sub"] == "viewer"
    assert claims["exp"] - claims["iat"] == 86400


def test_a_viewer_may_read_but_not_trigger(api: TestClient, as_role: Headers) -> None:
    reply = api.post(
        "/api/v2/dags/etl/dagRuns", json={"logical_date": None}, headers=as_role("viewer")
    )
    assert reply.status_code == 403
    assert "needs user" in reply.json()["detail"]
    assert (
        api.get("/api/v2/dags/etl/dagRuns", headers=as_role("viewer")).json()["total_entries"] == 0
    )


def test_rights_grow_with_the_role(api: TestClient, as_role: Headers) -> None:
    pool = {"name": "p", "slots": 2}
    assert api.post("/api/v2/pools", json=pool, headers=as_role("user")).status_code == 403
    assert api.post("/api/v2/pools", json=pool, headers=as_role("op")).status_code == 201
    variable = {"key": "v", "value": "x"}
    assert api.post("/api/v2/variables", json=variable, headers=as_role("user")).status_code == 403
    assert api.post("/api/v2/variables", json=variable, headers=as_role("admin")).status_code == 201


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found, page
    return found.group(1)


def test_the_login_form_signs_in_with_a_session_cookie(api: TestClient) -> None:
    assert api.get("/", follow_redirects=False).headers["location"].startswith("/auth/login")
    page = api.get("/auth/login")
    assert page.status_code == 200 and "<form" in page.text
    form = {"username": "user", "password": PASSWORD, "csrf_token": _csrf(page.text), "next": "/"}
    reply = api.post("/auth/login", data=form, follow_redirects=False)
    assert reply.status_code == 303 and reply.headers["location"] == "/"
    assert SESSION_COOKIE in api.cookies
    assert "Signed in as <strong>user</strong>" in api.get("/").text
    # The cookie reads the API (a page's live parts poll it) but never writes through it.
    assert api.get("/api/v2/dags").status_code == 200
    assert api.post("/api/v2/dags/etl/dagRuns", json={"logical_date": None}).status_code == 401


def test_a_form_post_without_its_csrf_token_is_refused(api: TestClient) -> None:
    api.get("/auth/login")  # the session now has a token; the post below does not carry it
    form = {"username": "user", "password": PASSWORD, "next": "/"}
    reply = api.post("/auth/login", data=form, follow_redirects=False)
    assert reply.status_code == 403
    assert "CSRF" in reply.json()["detail"]
    reply = api.post("/auth/login", data={**form, "csrf_token": "forged"}, follow_redirects=False)
    assert reply.status_code == 403
    assert api.get("/", follow_redirects=False).status_code == 303  # still not signed in


def test_a_wrong_password_on_the_form_shows_the_form_again(api: TestClient) -> None:
    token = _csrf(api.get("/auth/login").text)
    form = {"username": "user", "password": "nope", "csrf_token": token, "next": "/"}
    reply = api.post("/auth/login", data=form)
    assert reply.status_code == 401
    assert "Invalid username or password" in reply.text


def test_login_never_redirects_off_the_server(api: TestClient) -> None:
    token = _csrf(api.get("/auth/login").text)
    form = {"username": "user", "password": PASSWORD, "csrf_token": token}
    for elsewhere in ("https://evil.example/", "//evil.example", "/\\evil.example", "dags"):
        reply = api.post("/auth/login", data={**form, "next": elsewhere}, follow_redirects=False)
        assert reply.headers["location"] == "/", elsewhere
        form["csrf_token"] = _csrf(api.get("/auth/login").text)  # a new session at each sign-in


def test_logout_needs_the_csrf_token_and_ends_the_session(api: TestClient) -> None:
    token = _csrf(api.get("/auth/login").text)
    api.post("/auth/login", data={"username": "user", "password": PASSWORD, "csrf_token": token})
    assert api.post("/auth/logout", data={}, follow_redirects=False).status_code == 403
    page = api.get("/").text
    reply = api.post("/auth/logout", data={"csrf_token": _csrf(page)}, follow_redirects=False)
    assert reply.status_code == 303
    assert api.get("/", follow_redirects=False).status_code == 303


def test_the_generated_key_is_kept_so_tokens_outlive_a_restart(
    api: TestClient, as_role: Headers, home: Home
) -> None:
    from api import create_app
    from api.security import SECRET_KEY_FILE

    kept = home.settings.resolved_home / SECRET_KEY_FILE
    assert kept.stat().st_mode & 0o777 == 0o600
    with TestClient(create_app(home.settings)) as restarted:
        assert restarted.get("/api/v2/dags", headers=as_role("viewer")).status_code == 200


def test_the_server_freezes_what_its_startup_made(home: Home) -> None:
    # Its full collections then skip the app and its modules (api/app.py).
    from api import create_app

    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    with TestClient(create_app(home.settings)):
        assert gc.get_freeze_count() > 100_000


def test_a_configured_key_signs_instead(home: Home, monkeypatch) -> None:
    from api import create_app

    monkeypatch.setattr(home.settings, "api_secret_key", "a configured key of 32 characters!")
    app = create_app(home.settings)
    token = app.state.tradewind.tokens.issue(holder_of(home, "admin"))
    assert jwt.decode(token, "a configured key of 32 characters!", algorithms=["HS256"])["sub"]


def test_a_page_sends_a_browser_without_a_session_to_sign_in(api: TestClient) -> None:
    reply = api.get("/?tab=x", follow_redirects=False)
    assert reply.status_code == 303
    assert reply.headers["location"] == "/auth/login?next=/%3Ftab%3Dx"


def test_pages_get_the_role_check_and_scripts_the_csrf_header(home: Home) -> None:
    """What the UI's routers build on: a page needing a role, a script's CSRF-checked post."""
    from fastapi import APIRouter, Depends

    from api import create_app
    from api.csrf import CsrfChecked
    from api.deps import require_on_page
    from state.records.users import Role

    app = create_app(home.settings)
    pages = APIRouter()

    # As dependencies: this function's annotations could not name the test's local imports.
    @pages.post("/ops-only", dependencies=[Depends(require_on_page(Role.OP)), CsrfChecked])
    def ops_only() -> dict[str, str]:
        return {"done": "yes"}

    app.include_router(pages)
    with TestClient(app) as browser:
        token = _csrf(browser.get("/auth/login").text)
        form = {"username": "user", "password": PASSWORD, "csrf_token": token}
        browser.post("/auth/login", data=form)
        token = _csrf(browser.get("/").text)
        assert browser.post("/ops-only", headers={"X-CSRF-Token": token}).status_code == 403
        form = {"username": "op", "password": PASSWORD, "csrf_token": token}
        browser.post("/auth/login", data=form)
        token = _csrf(browser.get("/").text)
        no_token = browser.post("/ops-only")
        assert no_token.status_code == 403, no_token.text  # no token
        reply = browser.post("/ops-only", headers={"X-CSRF-Token": token})
        assert reply.status_code == 200, reply.text
