"""The grid's try markers, its details panel opened in place, and its keyboard.

A task instance retried shows how many tries it had on its cell, each earlier try's state in
the cell's title and in the panel; the panel (state, tries, times, log tail, links) opens
beside the grid on a click or Enter and closes with Escape; the arrow keys move the cell.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import update

from api.logs import try_log
from state.core.db import session_scope
from state.core.models import TaskInstance, TaskInstanceHistory, utcnow
from tests.state.harness import Home

Shoot = Callable[[Any, str], Path]
SignedIn = Callable[[str], TestClient]
T = "2026-12-04T10:00:00.000000+00:00"


def _retried(home: Home, run_id: str, task_id: str, earlier: list[str], state: str) -> None:
    """``task_id`` of ``run_id`` on its try ``len(earlier) + 1``, the earlier ones kept."""
    now = utcnow()
    tries = len(earlier) + 1
    with session_scope(home.url) as session:
        session.execute(
            update(TaskInstance)
            .where(TaskInstance.run_id == run_id, TaskInstance.task_id == task_id)
            .values(state=state, try_number=tries, start_date=now, end_date=now, hostname="w2")
        )
        session.add_all(
            TaskInstanceHistory(dag_id="etl", run_id=run_id, task_id=task_id, try_number=n,
                                state=kept, start_date=now, end_date=now, hostname="w1")
            for n, kept in enumerate(earlier, start=1)
        )  # fmt: skip
    path = try_log(home.settings.logs_folder, ("etl", run_id, task_id, -1), tries)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"[{T}] supervisor: try {tries} of {task_id} started on w2\n"
        f"[{T}] stderr: WARNING task: the rows came late\n"
        f"[{T}] stdout: loaded 3 rows\n"
    )


def _two_runs(home: Home) -> None:
    home.trigger("etl", run_id="r1")
    home.trigger("etl", run_id="r2")
    _retried(home, "r1", "load", ["failed"], "success")
    _retried(home, "r2", "extract", ["failed", "up_for_retry"], "running")


def test_a_retried_cell_shows_its_tries_and_the_panel_lists_them(
    signed_in: SignedIn, home: Home
) -> None:
    _two_runs(home)
    client = signed_in("viewer")
    grid = client.get("/dags/etl/grid").text
    assert 'data-tries="2"' in grid and "try 2 (before: try 1 failed)" in grid
    assert 'data-tries="3"' in grid and "try 1 failed, try 2 up_for_retry" in grid
    assert grid.count('class="try-mark"') == 2  # the others had one try
    panel = client.get("/dags/etl/runs/r1/tasks/load/partials/panel").text
    assert 'data-try="1" data-state="failed"' in panel
    assert 'data-try="2" data-state="success"' in panel
    assert "the rows came late" in panel and 'class="ll ll-warning"' in panel
    assert 'href="/dags/etl/runs/r1/tasks/load"' in panel
    mapped = client.get("/dags/etl/runs/r1/tasks/transform.double/partials/panel")
    assert mapped.status_code == 200 and "Task instances" in mapped.text
    assert client.get("/dags/etl/runs/r1/tasks/nope/partials/panel").status_code == 404


def test_the_panel_opens_in_place_and_the_keyboard_moves_the_cell(
    sqlite_home: Home, page: Any, shoot: Shoot
) -> None:
    _two_runs(sqlite_home)
    page.goto("/dags/etl")
    retried = page.locator("a.cell.tried[href='/dags/etl/runs/r1/tasks/load']")
    assert retried.locator(".try-mark").inner_text() == "2"
    shoot(page, "grid-retried")

    retried.click()
    panel = page.locator("#grid-panel")
    panel.locator("tr[data-try='1'][data-state='failed']").wait_for()
    assert page.url.endswith("/dags/etl")  # still the grid
    assert "the rows came late" in panel.locator(".gp-log .ll-warning").inner_text()
    assert panel.locator("a:has-text('Open the task page')").get_attribute("href") == (
        "/dags/etl/runs/r1/tasks/load"
    )
    shoot(page, "grid-panel-open")
    page.keyboard.press("Escape")
    assert panel.is_hidden()

    # The keyboard: from extract of r1 down the visible rows (a group, its task, load) and
    # right to r2; Enter opens the details of the cell reached.
    page.locator("a.cell[href='/dags/etl/runs/r1/tasks/extract']").focus()
    page.keyboard.press("ArrowRight")
    focused = page.evaluate("document.activeElement.getAttribute('href')")
    assert focused == "/dags/etl/runs/r2/tasks/extract"
    page.keyboard.press("Enter")
    panel.locator("tr[data-try='3']").wait_for()
    assert panel.locator("#grid-panel-title").inner_text() == "extract"
    assert panel.locator("tr[data-try='2'][data-state='up_for_retry']").count() == 1
    shoot(page, "grid-panel-keyboard")
    page.keyboard.press("Escape")
    for _ in range(3):
        page.keyboard.press("ArrowDown")
    focused = page.evaluate("document.activeElement.getAttribute('href')")
    assert focused == "/dags/etl/runs/r2/tasks/load"
    page.keyboard.press("ArrowLeft")
    focused = page.evaluate("document.activeElement.getAttribute('href')")
    assert focused == "/dags/etl/runs/r1/tasks/load"
    page.keyboard.press("Enter")
    panel.locator("tr[data-try='1'][data-state='failed']").wait_for()
    # Across a refresh of the grid, the selection and the panel stay.
    page.evaluate(
        "new Promise(done => document.addEventListener('tradewind:refreshed', done, {once: true}))"
    )
    assert page.locator(".cell.selected").get_attribute("href") == "/dags/etl/runs/r1/tasks/load"
    assert panel.is_visible()
