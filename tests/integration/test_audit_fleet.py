"""The audit trail on a real fleet (PostgreSQL, Redis, scheduler, Celery worker, API server),
seen through Airflow's own client and headless Chromium.

One run of a task that fails its first try and succeeds its second:
- a task page opened before the first try starts shows each try appear, with its state and its
  log, without a reload; an earlier try's log is a click away;
- ``/tries`` answers both tries with their own state, times and host (Airflow's client);
- the run says it was triggered through the REST API, and by whom; notes are written on the
  run and on the task instance;
- a clear from the task page is recorded: the DAG's Events tab says who cleared what.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import airflow_client.client as airflow
import pytest

from tests.integration.conftest import Fleet
from tests.ui.conftest import CHROMIUM, CHROMIUM_ARGS

DAGS = Path(__file__).parent / "audit_dags"
PASSWORD = "s3cret-for-the-audit"
TASK_PAGE = "/dags/flaky/runs/r1/tasks/wobble"

pytestmark = pytest.mark.integration


def _token(base: str) -> str:
    body = json.dumps({"username": "admin", "password": PASSWORD}).encode()
    request = urllib.request.Request(
        f"{base}/auth/token", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        return str(json.loads(reply.read())["access_token"])


def _serve(fleet: Fleet) -> str:
    tradewind = [sys.executable, "-m", "cli"]
    create = [*tradewind, "users", "create", "--username", "admin", "--password", PASSWORD]
    subprocess.run([*create, "--role", "admin"], env=fleet.env, check=True, timeout=60)
    base = fleet.start_api()
    return base


def _browser_page(playwright: Any, base: str) -> Any:
    browser = playwright.chromium.launch(
        executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
    )
    context = browser.new_context(base_url=base, viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(90_000)
    page = context.new_page()
    page.goto("/auth/login?next=/dags")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/dags")
    return page


def _check_the_client_sees_both_tries_and_notes(base: str) -> None:
    client = airflow.ApiClient(airflow.Configuration(host=base, access_token=_token(base)))
    tis, runs = airflow.TaskInstanceApi(client), airflow.DagRunApi(client)
    tries = tis.get_task_instance_tries("flaky", "r1", "wobble").task_instances
    assert [(t.try_number, t.state.value) for t in tries] == [(1, "failed"), (2, "success")]
    assert all(t.start_date and t.end_date and t.hostname and t.duration for t in tries)
    assert tries[0].end_date <= tries[1].start_date
    first = tis.get_task_instance_try_details("flaky", "r1", "wobble", 1)
    assert (first.state.value, first.hostname) == ("failed", tries[0].hostname)

    run = runs.get_dag_run("flaky", "r1")
    assert (run.triggered_by.value, run.triggering_user_name) == ("rest_api", "admin")
    noted = runs.patch_dag_run("flaky", "r1", airflow.DAGRunPatchBody(note="source was late"))
    assert noted.note == "source was late"
    body = airflow.PatchTaskInstanceBody(note="first try: source not ready")
    tis.patch_task_instance("flaky", "r1", "wobble", body)
    assert tis.get_task_instance("flaky", "r1", "wobble").note == "first try: source not ready"

    events = airflow.EventLogApi(client)
    triggered = events.get_event_logs(dag_id="flaky", event="trigger_dag_run").event_logs
    assert [(e.owner, e.run_id) for e in triggered] == [("admin", "r1")]
    assert json.loads(triggered[0].extra)["origin"] == "api"
    one = events.get_event_log(triggered[0].event_log_id)
    assert (one.event, one.dag_id) == ("trigger_dag_run", "flaky")
    notes = events.get_event_logs(dag_id="flaky", included_events=["patch_dag_run"]).event_logs
    assert [json.loads(e.extra)["note"] for e in notes] == ["source was late"]


@pytest.mark.timeout(300)
def test_a_retried_task_followed_live_and_who_cleared_it(
    make_fleet: Callable[..., Fleet], tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.is_file():
        pytest.skip("no /usr/bin/chromium: `apt-get install -y chromium` (.ci/run does)")
    fleet = make_fleet(DAGS)
    base = _serve(fleet)
    client = airflow.ApiClient(airflow.Configuration(host=base, access_token=_token(base)))
    conf = {"marker": str(tmp_path / "marker")}
    body = airflow.TriggerDAGRunPostBody(dag_run_id="r1", logical_date=None, conf=conf)
    airflow.DagRunApi(client).trigger_dag_run("flaky", body)
    shots = tmp_path / "screenshots"

    with sync_playwright() as playwright:
        page = _browser_page(playwright, base)
        page.goto(TASK_PAGE)  # before its first try: nothing ran yet
        assert page.locator("text=No try yet.").count() == 1
        fleet.start_scheduler()
        fleet.start_worker()
        tries = page.locator("table.pg-tries")
        tries.locator('tr[data-try="1"][data-state="failed"]').wait_for()
        tries.locator('tr[data-try="2"][data-state="success"]').wait_for()
        log = page.locator("#pg-log")
        log.filter(has_text="second try: the source answered").wait_for()
        page.screenshot(path=str(shots / "task_page_two_tries.png"), full_page=True)

        page.locator('tr[data-try="1"] a').click()  # the earlier try's own log
        page.locator("#pg-log").filter(has_text="first try: the source is not ready").wait_for()

        _check_the_client_sees_both_tries_and_notes(base)

        page.goto(TASK_PAGE)
        assert "first try: source not ready" in page.locator("#note").inner_text()
        page.click("#pg-task-live button[data-recover=clear]")  # the dialog lists it
        page.wait_for_selector("#rc-list .rc-row")
        page.click("#rc-confirm")
        page.wait_for_selector(".flash.ok")
        page.goto("/dags/flaky?tab=events&event=post_clear_task_instances")
        row = page.locator('tr[data-event="post_clear_task_instances"]')
        assert row.locator("td.who").inner_text() == "admin"
        assert "ui" in row.inner_text() and "wobble" in row.inner_text()
        page.screenshot(path=str(shots / "events_tab.png"), full_page=True)
        page.goto("/dags/flaky/runs/r1")
        assert page.locator("[data-triggering-user]").inner_text() == "admin"
    assert fleet.wait_run("flaky", "r1", timeout=90) == "success"
