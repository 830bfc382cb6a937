"""The audit trail on the pages: the Events browse and a DAG's Events tab (filters in the URL),
notes on the run and task pages, how a run was triggered, the tries of a task instance.

Forms are posted as a browser posts them (with their CSRF token), as the signed-in user; the
browser-driven flows (a retried task followed live, who cleared it) are in
tests/integration/test_audit_fleet.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from state.core.models import utcnow
from tests.state.harness import TI, Home
from tests.ui.conftest import csrf_of

SignedIn = Callable[[str], TestClient]
RUN = "/dags/solo/runs/r1"


def _post(client: TestClient, page: str, action: str, form: dict[str, str]) -> int:
    token = csrf_of(client.get(page).text)
    reply = client.post(action, data={**form, "csrf_token": token}, follow_redirects=False)
    return reply.status_code


def test_a_trigger_from_the_form_and_a_pause_show_in_the_events(
    signed_in: SignedIn, home: Home
) -> None:
    user = signed_in("user")
    assert _post(user, "/dags/solo/trigger", "/dags/solo/trigger", {"run_id": "r1"}) == 303
    assert _post(user, "/dags", "/dags/solo/paused", {"paused": "true", "back": "/dags"}) == 303
    run = user.get(RUN).text
    assert "ui" in run and "data-triggering-user>user<" in run
    tab = user.get("/dags/solo?tab=events").text
    assert 'data-event="trigger_dag_run"' in tab and 'data-event="patch_dag"' in tab
    only = user.get("/events", params={"event": "patch_dag", "owner": "user"}).text
    assert 'data-event="patch_dag"' in only and 'data-event="trigger_dag_run"' not in only
    assert 'value="patch_dag"' in only  # the filter stays in the form (and the URL)
    nobody = user.get("/events", params={"owner": "nobody"}).text
    assert "No events match these filters." in nobody


def test_notes_on_the_run_and_task_pages(signed_in: SignedIn, home: Home) -> None:
    run_pk = home.trigger("solo", run_id="r1")
    (queued,) = home.schedule(run_pk)
    home.end_try(queued.ti_id, TI.FAILED, hostname="w9")
    user = signed_in("user")
    assert _post(user, RUN, f"{RUN}/note", {"note": "rerun after the fix"}) == 303
    page = user.get(RUN).text
    assert "rerun after the fix" in page and "by user" in page
    task = f"{RUN}/tasks/only"
    assert _post(user, task, f"{task}/note", {"note": "host w9 was full", "map_index": "-1"}) == 303
    page = user.get(task).text
    assert "host w9 was full" in page
    assert 'data-try="1" data-state="failed"' in page and "w9" in page
    viewer = signed_in("viewer").get(task).text
    assert "host w9 was full" in viewer and "Save note" not in viewer
    tab = user.get("/dags/solo?tab=events").text
    assert tab.count('data-event="patch_task_instance"') == 1
    assert tab.count('data-event="patch_dag_run"') == 1


def test_a_clear_from_the_task_page_keeps_the_try_and_says_who(
    signed_in: SignedIn, home: Home
) -> None:
    run_pk = home.trigger("solo", run_id="r1")
    (queued,) = home.schedule(run_pk)
    home.end_try(queued.ti_id, TI.SUCCESS, hostname="w1")
    op = signed_in("op")
    task = f"{RUN}/tasks/only"
    assert _post(op, task, f"{task}/clear", {"map_index": "-1"}) == 303
    home.schedule(run_pk)
    page = op.get(task).text
    assert 'data-try="1" data-state="success"' in page
    assert 'data-try="2" data-state="queued"' in page
    events = op.get("/events", params={"event": "post_clear_task_instances"}).text
    assert '<td class="who">op</td>' in events
    body = op.get(f"{task}/partials/body").text
    assert 'id="pg-log"' in body and "try 2" in body.lower()


def test_the_events_tab_and_the_tries_in_chromium(
    page: Any, sqlite_home: Home, shoot: Callable[[Any, str], Path]
) -> None:
    """Looked at: a DAG's Events tab after a clear in the browser, and the task page's tries."""
    home = sqlite_home
    run_pk = home.trigger("solo", run_id="r1")
    (queued,) = home.schedule(run_pk)
    failed = {"hostname": "w1", "error": "RuntimeError: source not ready"}
    home.end_try(queued.ti_id, TI.FAILED, start_date=utcnow(), end_date=utcnow(), **failed)
    page.goto(f"{RUN}/tasks/only")
    page.fill("form.note textarea", "the source was late")
    page.click("form.note button")
    page.click("#pg-task-live button[data-recover=clear]")  # the dialog lists it
    page.wait_for_selector("#rc-list .rc-row")
    page.click("#rc-confirm")
    page.wait_for_selector(".flash.ok")
    (queued,) = home.schedule(run_pk)
    home.end_try(queued.ti_id, TI.SUCCESS, hostname="w2", start_date=utcnow(), end_date=utcnow())
    page.goto(f"{RUN}/tasks/only")
    tries = page.locator("table.pg-tries")
    assert tries.locator('tr[data-try="1"]').get_attribute("data-state") == "failed"
    assert tries.locator('tr[data-try="2"]').get_attribute("data-state") == "success"
    shoot(page, "task_tries")
    page.goto("/dags/solo?tab=events")
    row = page.locator('tr[data-event="post_clear_task_instances"]')
    assert row.locator("td.who").inner_text() == "admin"
    shoot(page, "events_tab")
