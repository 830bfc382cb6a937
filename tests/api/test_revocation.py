"""Sign-out, a new password, a new role and a deletion end every token and session of the user.

Each test signs the user in twice (a bearer token, and a browser's session cookie), makes the
event happen as an operator would (the sign-out form, the users page), then sends the old token
and the old cookie again: both are 401.
"""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from api.app import SESSION_COOKIE
from api.security import hash_password
from state.core.db import session_scope
from state.records.users import Role, create_user
from tests.api.conftest import PASSWORD
from tests.state.harness import Home


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found, page
    return found.group(1)


def _browser(api: TestClient, username: str, password: str = PASSWORD) -> TestClient:
    browser = TestClient(api.app)
    form = {"username": username, "password": password}
    reply = browser.post(
        "/auth/login", data={**form, "csrf_token": _csrf(browser.get("/auth/login").text)}
    )
    assert reply.status_code == 200, reply.text  # followed to the home page
    return browser


def _token(api: TestClient, username: str, password: str = PASSWORD) -> dict[str, str]:
    reply = api.post("/auth/token", json={"username": username, "password": password})
    assert reply.status_code == 201, reply.text
    return {"Authorization": f"Bearer {reply.json()['access_token']}"}


class SignedIn:
    """A user's token and the cookie of their browser, kept to be replayed later."""

    def __init__(self, api: TestClient, username: str, password: str = PASSWORD) -> None:
        self.api = api
        self.token = _token(api, username, password)
        self.browser = _browser(api, username, password)
        self.cookie = self.browser.cookies[SESSION_COOKIE]

    def token_answer(self) -> int:
        return self.api.get("/api/v2/dags", headers=self.token).status_code

    def cookie_answer(self) -> int:
        replay = TestClient(self.api.app, cookies={SESSION_COOKIE: self.cookie})
        return replay.get("/api/v2/dags").status_code

    def both_work(self) -> bool:
        return (self.token_answer(), self.cookie_answer()) == (200, 200)

    def both_refused(self) -> bool:
        return (self.token_answer(), self.cookie_answer()) == (401, 401)


def _admin_saves(api: TestClient, **form: str) -> None:
    admin = _browser(api, "admin")
    token = _csrf(admin.get("/users").text)
    reply = admin.post("/users", data={**form, "csrf_token": token}, follow_redirects=False)
    assert reply.status_code == 303, reply.text


def test_signing_out_ends_every_session_and_token_of_the_user(api: TestClient) -> None:
    user = SignedIn(api, "user")
    other_device = SignedIn(api, "user")
    assert user.both_work() and other_device.both_work()
    page = user.browser.get("/").text
    reply = user.browser.post("/auth/logout", data={"csrf_token": _csrf(page)})
    assert reply.url.path == "/auth/login"
    assert user.both_refused() and other_device.both_refused()
    detail = api.get("/api/v2/dags", headers=user.token).json()["detail"]
    assert "sign in again" in detail
    assert SignedIn(api, "user").both_work()  # signing in again works


def test_a_stale_cookie_signing_out_ends_nobody_elses_sign_in(api: TestClient) -> None:
    stale = SignedIn(api, "user")
    page = stale.browser.get("/").text
    stale.browser.post("/auth/logout", data={"csrf_token": _csrf(page)})
    fresh = SignedIn(api, "user")
    replay = TestClient(api.app, cookies={SESSION_COOKIE: stale.cookie})
    # The old cookie still carries its CSRF token: its sign-out is accepted and changes nothing.
    token = _csrf(replay.get("/auth/login").text)
    reply = replay.post("/auth/logout", data={"csrf_token": token}, follow_redirects=False)
    assert reply.status_code == 303
    assert fresh.both_work()


def test_a_new_password_ends_every_session_and_token_of_the_user(api: TestClient) -> None:
    user = SignedIn(api, "user")
    _admin_saves(api, username="user", role="user", password="a new password", existing="true")
    assert user.both_refused()
    assert SignedIn(api, "user", "a new password").both_work()


def test_a_new_role_ends_every_session_and_token_of_the_user(api: TestClient) -> None:
    user = SignedIn(api, "user")
    _admin_saves(api, username="user", role="user", existing="true")  # unchanged: nothing ends
    assert user.both_work()
    _admin_saves(api, username="user", role="viewer", existing="true")
    assert user.both_refused()
    viewer = SignedIn(api, "user")
    assert viewer.both_work()
    run = {"logical_date": None}
    assert api.post("/api/v2/dags/etl/dagRuns", json=run, headers=viewer.token).status_code == 403


def test_a_deleted_users_token_never_opens_a_new_user_of_the_same_name(
    api: TestClient, home: Home
) -> None:
    # The newest user: on SQLite without AUTOINCREMENT, the next one would get the same id.
    with session_scope(home.url) as session:
        create_user(session, "zed", hash_password(PASSWORD), Role.ADMIN)
    zed = SignedIn(api, "zed")
    admin = _browser(api, "admin")
    token = _csrf(admin.get("/users").text)
    admin.post("/users/zed/delete", data={"csrf_token": token})
    assert zed.both_refused()
    with session_scope(home.url) as session:
        create_user(session, "zed", hash_password(PASSWORD), Role.ADMIN)
    assert zed.both_refused()
    detail = api.get("/api/v2/dags", headers=zed.token).json()["detail"]
    assert detail == "user 'zed' no longer exists"
    assert SignedIn(api, "zed").both_work()


def test_the_session_cookie_is_secure_when_set(home: Home, monkeypatch) -> None:
    from api import create_app

    def session_cookie() -> str:
        browser = TestClient(create_app(home.settings), base_url="https://testserver")
        reply = browser.get("/auth/login")  # its form's CSRF token starts the session
        return str(reply.headers["set-cookie"]).lower()

    assert SESSION_COOKIE in session_cookie() and "secure" not in session_cookie()
    monkeypatch.setattr(home.settings, "api_cookie_secure", True)
    assert "; secure" in session_cookie()
