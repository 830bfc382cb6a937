"""The home page (``/``, ``/home``): health from heartbeats, DAGs failed and running, the newest
runs and asset events, import errors; a bounded number of statements; and in Chromium."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from state.core import DagImportError, DagRunState, session_scope, utcnow
from state.records import (
    EventSource,
    JobKind,
    OutletEvent,
    mark_run_state,
    record_events,
    register_job,
)
from tests.state.harness import Home, counting_statements

Client = Callable[[str], TestClient]


def _job(home: Home, kind: JobKind, age_seconds: float, name: str | None = None) -> None:
    with session_scope(home.url) as session:
        register_job(session, kind, name, now=utcnow() - dt.timedelta(seconds=age_seconds))


def _fail(home: Home, run_pk: int) -> None:
    from state.core import DagRun

    with session_scope(home.url) as session:
        run = session.get(DagRun, run_pk)
        assert run is not None
        mark_run_state(session, run, DagRunState.FAILED)


def _event(home: Home, run_id: str) -> None:
    with session_scope(home.url) as session:
        source = EventSource("etl", run_id, "load")
        record_events(session, source, [OutletEvent("s3://lake/rows", "rows")], utcnow())


def _card(html: str, kind: str) -> str:
    found = re.search(
        rf'<section class="hm-card [^"]*" data-kind="{kind}".*?</section>', html, re.S
    )
    assert found, f"no {kind} card"
    return found.group(0)


def _fill(home: Home) -> None:
    _job(home, JobKind.SCHEDULER, 1)
    _job(home, JobKind.WORKER, 2, name="w1@alpha")
    _job(home, JobKind.WORKER, 600, name="w2@beta")  # SIGKILLed ten minutes ago
    _fail(home, home.trigger("etl", run_id="broken"))
    home.trigger("solo", run_id="waiting")
    _event(home, "broken")
    with session_scope(home.url) as session:
        session.add(DagImportError(fileloc="/dags/bad.py", error="SyntaxError: bad"))


def test_home_shows_health_failed_dags_runs_events_and_import_errors(
    signed_in: Client, home: Home
) -> None:
    _fill(home)
    html = signed_in("viewer").get("/").text

    scheduler = _card(html, "scheduler")
    assert 'data-status="healthy"' in scheduler and "1 of 1 alive" in scheduler
    workers = _card(html, "worker")
    assert 'data-status="healthy"' in workers and "1 of 2 alive" in workers
    assert "w1@alpha" in workers and "w2@beta" in workers and "unhealthy" in workers
    assert 'data-status="none"' in _card(html, "triggerer") and "never ran" in html

    assert '<span class="hm-number">1</span> failed' in html
    assert '<strong>Failed:</strong>\n  <a href="/dags/etl">etl</a>' in html
    assert '<span class="hm-number">1</span> import error ' in html
    assert 'href="/dags/etl/runs/broken"' in html and 'href="/dags/solo/runs/waiting"' in html
    assert "<strong>rows</strong>" in html and "s3://lake/rows" in html
    assert '<span class="state-badge state-failed">failed</span> 1' in html
    assert 'aria-current="page">Home</a>' in html


def test_home_is_the_landing_page_and_its_health_refreshes_alone(
    signed_in: Client, home: Home
) -> None:
    client = signed_in("viewer")
    assert "<h1>Home</h1>" in client.get("/home").text
    _job(home, JobKind.TRIGGERER, 1)
    partial = client.get("/home/health").text
    assert "<html" not in partial
    assert 'data-status="healthy"' in _card(partial, "triggerer")


def test_home_costs_the_same_statements_however_many_runs(signed_in: Client, home: Home) -> None:
    client = signed_in("viewer")
    _fill(home)

    def statements() -> int:
        with counting_statements(home.url) as counter:
            assert client.get("/").status_code == 200
        return len(counter.statements)

    before = statements()
    for number in range(30):
        _fail(home, home.trigger("solo", run_id=f"r{number}"))
        _event(home, f"r{number}")
    assert statements() == before


def test_the_home_page_in_chromium(
    browser_as: Callable[[str], Any], sqlite_home: Home, shoot: Callable[[Any, str], Path]
) -> None:
    _fill(sqlite_home)
    for number in range(3):
        sqlite_home.trigger("etl", run_id=f"nightly-{number}")
    page = browser_as("viewer")
    page.goto("/")
    assert page.locator('[data-kind="scheduler"] .hm-status').inner_text() == "healthy"
    assert page.locator('[data-kind="worker"] li.silent').count() == 1
    page.locator("a.hm-stat-failed").first.wait_for()
    shot = shoot(page, "home")
    assert shot.stat().st_size > 10_000
    page.click("text=broken")
    page.wait_for_url("**/dags/etl/runs/broken")
