"""Sign-in throttling (per user, per client) and password hashing on its own executor."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

import api.security
from api import create_app
from api.throttle import LoginThrottle, Throttled
from tests.api.conftest import PASSWORD
from tests.state.harness import Home

MAX_FAILURES = 3


@pytest.fixture
def throttled_app(home: Home, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    monkeypatch.setattr(home.settings, "api_login_max_failures", MAX_FAILURES)
    yield home


def _from(home: Home, address: str) -> TestClient:
    """A client at ``address`` (the key the per-client count is kept under)."""
    return TestClient(create_app(home.settings), client=(address, 50000))


def _sign_in(client: TestClient, username: str, password: str = "wrong") -> int:
    reply = client.post("/auth/token", json={"username": username, "password": password})
    return reply.status_code


def test_one_client_failing_for_many_names_is_throttled(throttled_app: Home) -> None:
    app = create_app(throttled_app.settings)
    guesser = TestClient(app, client=("10.0.0.1", 50000))
    assert [_sign_in(guesser, name) for name in ("a", "b", "c")] == [401] * MAX_FAILURES
    reply = guesser.post("/auth/token", json={"username": "d", "password": "wrong"})
    assert reply.status_code == 429
    assert 1 <= int(reply.headers["retry-after"]) <= 300
    assert reply.json()["detail"].startswith("too many failed sign-ins: try again in ")
    elsewhere = TestClient(app, client=("10.0.0.2", 50000))
    assert _sign_in(elsewhere, "e") == 401  # another client is not held back


def test_one_user_failing_from_many_clients_is_throttled(throttled_app: Home) -> None:
    app = create_app(throttled_app.settings)
    clients = [TestClient(app, client=(f"10.0.1.{n}", 50000)) for n in range(MAX_FAILURES + 1)]
    assert [_sign_in(client, "admin") for client in clients[:-1]] == [401] * MAX_FAILURES
    assert _sign_in(clients[-1], "admin", PASSWORD) == 429  # even with the right password
    assert _sign_in(clients[-1], "viewer", PASSWORD) == 201  # another user signs in


def test_successful_sign_ins_are_not_failures(throttled_app: Home) -> None:
    client = _from(throttled_app, "10.0.2.1")
    assert [_sign_in(client, "admin", PASSWORD) for _ in range(2 * MAX_FAILURES)] == [201] * 6


def test_the_sign_in_form_is_throttled_too(throttled_app: Home) -> None:
    browser = _from(throttled_app, "10.0.3.1")
    page = browser.get("/auth/login").text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert token
    form = {"username": "user", "password": "wrong", "csrf_token": token.group(1)}
    codes = [browser.post("/auth/login", data=form).status_code for _ in range(MAX_FAILURES + 1)]
    assert codes == [401] * MAX_FAILURES + [429]
    reply = browser.post("/auth/login", data=form)
    assert int(reply.headers["retry-after"]) >= 1
    assert "Too many failed sign-ins" in reply.text


def test_passwords_are_checked_on_the_hashing_executor(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []
    check = api.security.check_password

    def noting_the_thread(password: str, password_hash: str | None) -> bool:
        threads.append(threading.current_thread().name)
        return check(password, password_hash)

    monkeypatch.setattr(api.security, "check_password", noting_the_thread)
    client = _from(home, "10.0.4.1")
    assert _sign_in(client, "admin", PASSWORD) == 201
    assert _sign_in(client, "nobody") == 401
    assert len(threads) == 2
    assert all(name.startswith("password-hashing") for name in threads), threads


def test_a_failure_leaves_the_window_after_its_length() -> None:
    throttle = LoginThrottle(max_failures=1, window_seconds=0.2)
    throttle.begin("ana", "10.0.0.1")
    with pytest.raises(Throttled) as refused:
        throttle.begin("ana", "10.0.0.9")
    assert refused.value.retry_after_seconds == 1  # rounded up, never 0
    time.sleep(0.5)
    throttle.begin("ana", "10.0.0.9")


def test_concurrent_attempts_count_before_they_end() -> None:
    throttle = LoginThrottle(max_failures=2, window_seconds=60)
    first = throttle.begin("bo", "10.0.0.1")
    throttle.begin("bo", "10.0.0.1")  # both still being checked
    with pytest.raises(Throttled):
        throttle.begin("bo", "10.0.0.1")
    throttle.succeeded(first)
    throttle.begin("bo", "10.0.0.1")


def test_the_names_remembered_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("api.throttle.MAX_KEYS", 10)
    throttle = LoginThrottle(max_failures=5, window_seconds=60)
    for number in range(50):
        throttle.begin(f"made-up-{number}", f"10.0.9.{number}")
    assert len(throttle._failures) <= 11
