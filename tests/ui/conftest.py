"""Fixtures of the UI tests: a store with DAGs and one user per role, the app, a browser.

- ``home``: a migrated home (SQLite, and PostgreSQL under the ``integration`` mark) with
  ``UI_DAGS`` synced and a user named after each role (password ``PASSWORD``).
- ``signed_in(role)``: a ``TestClient`` whose session cookie is that role's user, signed in
  through the login form as a browser is.
- ``live_server``: the app on uvicorn in a thread, on a free port of 127.0.0.1 (its base URL).
- ``page``: a Playwright page in headless Debian chromium, signed in as ``admin`` on the live
  server (``browser_as(role)`` for another role); ``shoot(page, name)`` saves a screenshot
  under the test's tmp dir and returns its path, to look at.
Playwright never downloads a browser here: ``/usr/bin/chromium`` is installed by ``.ci/run``.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi.testclient import TestClient

from api import create_app
from state.core.db import session_scope
from state.records.users import Role, create_user
from tests.passwords import fixture_password_hash
from tests.state.harness import Home, tradewind_home

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PASSWORD = "correct horse battery staple"

UI_DAGS = """
from tradewind import DAG, Param, dag, task, task_group


@task
def extract() -> list[int]:
    return [1, 2, 3]


@task(retries=1)
def load(rows: list[int]) -> int:
    return sum(rows)


@task
def double(x: int) -> int:
    return 2 * x


@dag(
    dag_id="etl",
    tags=["demo", "nightly"],
    description="Extract, transform, load",
    doc_md="Loads **rows** every night.",
    params={
        "day": Param("2026-12-01", type="string", description="The day to load"),
        "rows": Param(3, type="integer", minimum=1),
        "mode": Param("full", enum=["full", "delta"]),
        "dry_run": Param(False, type="boolean"),
    },
)
def etl():
    rows = extract()

    @task_group(group_id="transform")
    def transform(values):
        return double.expand(x=values)

    load(transform(rows))


etl()

with DAG("solo", tags=["demo"]):
    extract.override(task_id="only")()
"""


def _make_users(url: str) -> None:
    with session_scope(url) as session:
        hashed = fixture_password_hash(PASSWORD)
        for role in Role:
            create_user(session, role.value, hashed, role)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def home(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Home]:
    env = (
        {}
        if request.param == "sqlite"
        else {"database_url": request.getfixturevalue("pg_migrated_url")}
    )
    with tradewind_home(tmp_path, monkeypatch, **env) as made:
        made.write_dag(UI_DAGS)
        made.sync()
        _make_users(made.url)
        yield made


@pytest.fixture
def sqlite_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    """The browser tests' home: SQLite (the server and the test share it by file)."""
    with tradewind_home(tmp_path, monkeypatch) as made:
        made.write_dag(UI_DAGS)
        made.sync()
        _make_users(made.url)
        yield made


CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(html: str) -> str:
    """The CSRF token of the first form of a page."""
    found = CSRF.search(html)
    assert found, "the page has no form with a CSRF token"
    return found.group(1)


def sign_in(client: TestClient, username: str) -> None:
    token = csrf_of(client.get("/auth/login").text)
    form = {"username": username, "password": PASSWORD, "csrf_token": token, "next": "/"}
    reply = client.post("/auth/login", data=form, follow_redirects=False)
    assert reply.status_code == 303, reply.text


@pytest.fixture
def signed_in(home: Home) -> Iterator[Callable[[str], TestClient]]:
    """``signed_in(role)``: a client signed in as that role's user (one per role)."""
    app = create_app(home.settings)
    clients: dict[str, TestClient] = {}

    def client(role: str) -> TestClient:
        if role not in clients:
            clients[role] = TestClient(app).__enter__()
            sign_in(clients[role], role)
        return clients[role]

    yield client
    for made in clients.values():
        made.__exit__(None, None, None)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def live_server(sqlite_home: Home) -> Iterator[str]:
    """The app served by uvicorn in a thread; its base URL."""
    port = _free_port()
    config = uvicorn.Config(
        create_app(sqlite_home.settings),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        ws="none",
        lifespan="off",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="ui-live-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            pytest.fail("the live API server did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=30)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not CHROMIUM.is_file():
        pytest.skip("no /usr/bin/chromium: `apt-get install -y chromium` (.ci/run does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        yield launched
        launched.close()


@pytest.fixture
def browser_as(browser: Any, live_server: str) -> Iterator[Callable[[str], Any]]:
    """``browser_as(role)``: a fresh page of its own context, signed in as that role."""
    contexts: list[Any] = []

    def open_page(role: str) -> Any:
        context = browser.new_context(base_url=live_server, viewport={"width": 1400, "height": 900})
        context.set_default_timeout(30_000)
        contexts.append(context)
        page = context.new_page()
        page.goto("/auth/login?next=/dags")
        page.fill("input[name=username]", role)
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url("**/dags")
        return page

    yield open_page
    for context in contexts:
        context.close()


@pytest.fixture
def page(browser_as: Callable[[str], Any]) -> Any:
    return browser_as("admin")


@pytest.fixture
def shoot(tmp_path: Path) -> Callable[[Any, str], Path]:
    folder = tmp_path / "screenshots"
    folder.mkdir()

    def screenshot(page: Any, name: str) -> Path:
        path = folder / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return screenshot
