"""The run page of a large run: its tasks a page of 100 at a time, its task instances counted
by state at the top, each count a filter; the statements the same as for a run of 3 tasks.

The browser test leaves screenshots of a 400-task run page under the test's tmp dir.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import update

from state.core.db import session_scope
from state.core.models import TaskInstance, utcnow
from tests.state.harness import Home, counting_statements

Shoot = Callable[[Any, str], Path]
SignedIn = Callable[[str], TestClient]
WIDE_DAG = """
from tradewind import DAG, TaskGroup, task


@task
def step() -> None:
    pass


with DAG("wide"):
    previous = None
    for g in range(8):
        with TaskGroup(group_id=f"part{g}"):
            for n in range(50):
                current = step.override(task_id=f"step_{n:03}")()
                if previous is not None and n == 0:
                    previous >> current
                previous = current
"""
DASH = "\N{EN DASH}"
ROW = re.compile(r'<td><a href="/dags/wide/runs/big/tasks/([^"]+)">')


def _wide_run(home: Home) -> None:
    """A run of 400 tasks: 3 failed, 10 running, the rest successes."""
    home.write_dag(WIDE_DAG, "wide.py")
    assert not home.sync().import_errors
    home.trigger("wide", run_id="big")
    now = utcnow()
    failed = ["part0.step_007", "part3.step_020", "part7.step_049"]
    running = [f"part5.step_{n:03}" for n in range(10)]
    with session_scope(home.url) as session:
        ours = (TaskInstance.dag_id == "wide", TaskInstance.run_id == "big")
        session.execute(
            update(TaskInstance)
            .where(*ours)
            .values(state="success", try_number=1, start_date=now, end_date=now)
        )
        for state, tasks in (("failed", failed), ("running", running)):
            session.execute(
                update(TaskInstance)
                .where(*ours, TaskInstance.task_id.in_(tasks))
                .values(state=state, end_date=None if state == "running" else now)
            )


def test_a_400_task_run_is_paged_with_its_counts_as_filters(
    signed_in: SignedIn, home: Home
) -> None:
    _wide_run(home)
    client = signed_in("viewer")
    first = client.get("/dags/wide/runs/big").text
    shown = ROW.findall(first)
    assert len(shown) == 100 and shown[0] == "part0.step_000"
    assert f"tasks 1{DASH}100 of 400" in first
    assert re.search(r'data-count-state="failed"[^>]*>failed <b>3</b>', first)
    assert re.search(r'data-count-state="running"[^>]*>running <b>10</b>', first)
    assert re.search(r'data-count-state="success"[^>]*>success <b>387</b>', first)
    assert 'href="/dags/wide/runs/big?offset=100#tasks" rel="next"' in first

    last = client.get("/dags/wide/runs/big", params={"offset": 300}).text
    assert len(ROW.findall(last)) == 100 and f"tasks 301{DASH}400 of 400" in last
    assert 'rel="next"' not in last and 'href="/dags/wide/runs/big#tasks" rel="prev"' not in last

    failed = client.get("/dags/wide/runs/big", params={"state": "failed"}).text
    assert ROW.findall(failed) == ["part0.step_007", "part3.step_020", "part7.step_049"]
    partial = client.get("/dags/wide/runs/big/partials/tasks", params={"state": "running"}).text
    assert len(ROW.findall(partial)) == 10
    assert 'data-refresh="/dags/wide/runs/big/partials/tasks?state=failed"' in failed  # kept

    with session_scope(home.url) as session:  # a state of its own is counted and filtered too
        session.execute(
            update(TaskInstance)
            .where(TaskInstance.run_id == "big", TaskInstance.task_id == "part6.step_000")
            .values(state="awaiting_input")
        )
    waiting = client.get("/dags/wide/runs/big", params={"state": "awaiting_input"}).text
    assert re.search(r'data-count-state="awaiting_input"[^>]*>awaiting input <b>1</b>', waiting)
    assert ROW.findall(waiting) == ["part6.step_000"]

    refused = client.get("/dags/wide/runs/big", params={"state": "bogus", "offset": "x"}).text
    assert "&#39;bogus&#39; is no task instance state" in refused
    assert len(ROW.findall(refused)) == 100


def test_the_run_page_of_400_tasks_costs_the_statements_of_3(
    signed_in: SignedIn, home: Home
) -> None:
    home.trigger("etl", run_id="small")
    _wide_run(home)
    client = signed_in("viewer")

    def statements(path: str) -> int:
        client.get(path)  # warm: the DAG's structure is parsed once per version
        with counting_statements(home.url) as counter:
            assert client.get(path).status_code == 200
        return len(counter.statements)

    small = statements("/dags/etl/runs/small")
    assert statements("/dags/wide/runs/big") == small
    assert (
        statements("/dags/wide/runs/big?state=success&offset=200") == small + 2
    )  # its page, its count


def test_the_400_task_run_page_in_chromium(sqlite_home: Home, page: Any, shoot: Shoot) -> None:
    _wide_run(sqlite_home)
    page.goto("/dags/wide/runs/big")
    page.wait_for_selector("#pg-tasks")
    assert page.locator("#pg-tasks tbody tr").count() == 100
    shoot(page, "run-400-tasks")
    page.click("#pg-state-counts a[data-count-state='failed']")
    page.wait_for_url("**/runs/big?state=failed#tasks")
    assert page.locator("#pg-tasks tbody tr").count() == 3
    shoot(page, "run-400-tasks-failed")
    page.goto("/dags/wide/runs/big?state=success")
    page.click(".pg-tasks-pager a[rel='next'] >> nth=0")
    page.wait_for_url("**/runs/big?state=success&offset=100#tasks")
    assert f"tasks 101{DASH}200 of 387" in page.locator(".pg-tasks-pager").first.inner_text()
