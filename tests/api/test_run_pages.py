"""The run and task pages: what they show, who may act on them, and what they cost.

The pages are read through the session cookie of the login form, as a browser does; their
forms carry the session's CSRF token. The statement counts of a page are compared between a
3-task run, a run of 2,000 mapped task instances and an iterable task of 16,194 items.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from state.core.db import session_scope
from state.core.enums import TaskInstanceState
from state.core.models import DagModel, TaskInstance, TaskStateValue
from state.records.checkpoints import batch_key
from tests.api.conftest import PASSWORD
from tests.state.harness import Home, counting_statements

ITERATE_DAG = """
from tradewind import dag, task


@task
def numbers() -> list[int]:
    return list(range(10))


@task
def square(x: int) -> int:
    return x * x


@dag(dag_id="items")
def items():
    square.iterate(x=numbers())


items()
"""


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found, page
    return found.group(1)


def sign_in(api: TestClient, role: str) -> str:
    """Sign in with the login form; returns the session's CSRF token for the pages' forms."""
    form = {
        "username": role,
        "password": PASSWORD,
        "csrf_token": _csrf(api.get("/auth/login").text),
    }
    assert api.post("/auth/login", data=form, follow_redirects=False).status_code == 303
    return _csrf(api.get("/").text)


def _mapped_run(home: Home, run_id: str, items: int) -> None:
    home.trigger("fan", run_id=run_id)
    with session_scope(home.url) as session:
        session.query(TaskInstance).filter_by(run_id=run_id, task_id="double").delete()
        session.add_all(
            TaskInstance(dag_id="fan", run_id=run_id, task_id="double", map_index=index,
                         state=TaskInstanceState.FAILED if index % 500 == 7 else "success",
                         error="ValueError: odd one" if index % 500 == 7 else None)
            for index in range(items)
        )  # fmt: skip


def _iterable_run(home: Home, run_id: str, total: int, per_round: int = 100) -> None:
    """A run whose ``square`` task has finished ``total`` items, as the worker checkpoints them."""
    home.trigger("items", run_id=run_id)
    with session_scope(home.url) as session:
        session.execute(
            update(TaskInstance)
            .where(TaskInstance.run_id == run_id, TaskInstance.task_id == "square")
            .values(items_total=total, try_number=1, state="failed")
        )
        for number, start in enumerate(range(0, total, per_round)):
            outcomes = [
                {"i": i, "f": f"f{i}", "s": "failed", "e": f"KeyError: {i}"}
                if i % 1000 == 3
                else {"i": i, "f": f"f{i}", "s": "success"}
                for i in range(start, min(start + per_round, total))
            ]
            value = json.dumps({"generation": 0, "outcomes": outcomes})
            session.add(TaskStateValue(dag_id="items", run_id=run_id, task_id="square",
                                       key=batch_key(number), value=value))  # fmt: skip


@pytest.fixture
def pages(home: Home) -> Home:
    home.write_dag(ITERATE_DAG, "items.py")
    home.sync()
    return home


def _statements(api: TestClient, home: Home, path: str) -> int:
    with counting_statements(home.url) as counter:
        reply = api.get(path)
        assert reply.status_code == 200, reply.text
    return len(counter.statements)


def test_the_run_page_shows_the_run_and_its_tasks_in_dag_order(api: TestClient, home: Home) -> None:
    home.trigger("etl", run_id="r1", conf={"n": 7})
    sign_in(api, "viewer")
    page = api.get("/dags/etl/runs/r1").text
    assert page.index(">extract</a>") < page.index(">load</a>")
    assert "&#34;n&#34;: 7" in page or '"n": 7' in page
    assert "Mark success" not in page  # a viewer gets no buttons
    assert 'data-refresh="/dags/etl/runs/r1/partials/tasks?' in page  # with its page and filter
    partial = api.get("/dags/etl/runs/r1/partials/tasks").text
    assert ">extract</a>" in partial and ">load</a>" in partial


def test_a_mapped_task_is_one_row_with_counts(api: TestClient, home: Home) -> None:
    _mapped_run(home, "big", 2000)
    sign_in(api, "viewer")
    page = api.get("/dags/fan/runs/big").text
    assert page.count(">double</a>") == 1
    assert "1,996 success" in page and "4 failed" in page and "2,000 map indexes" in page
    task = api.get("/dags/fan/runs/big/tasks/double").text
    assert "Failed map indexes" in task and "ValueError: odd one" in task
    assert "1\N{EN DASH}25 of 2,000" in task
    assert "26\N{EN DASH}50 of 2,000" in api.get("/dags/fan/runs/big/tasks/double?offset=25").text
    one = api.get("/dags/fan/runs/big/tasks/double?map_index=7").text
    assert "ValueError: odd one" in one and "No try yet." in one


def test_an_iterable_task_shows_its_items(api: TestClient, pages: Home) -> None:
    _iterable_run(pages, "many", 16194)
    sign_in(api, "viewer")
    run = api.get("/dags/items/runs/many").text
    assert "16,194 of 16,194 items" in run and "17 failed" in run
    page = api.get("/dags/items/runs/many/tasks/square").text
    assert "<b>16,177</b> done · <b>17</b> failed" in page
    assert "_iterable_batch_" not in page  # the checkpoints show as items, not as state keys
    assert "KeyError: 3" in page and "1\N{EN DASH}25 of 16,194" in page
    assert (
        "16,176\N{EN DASH}16,194 of 16,194"
        in api.get("/dags/items/runs/many/tasks/square?offset=16175").text
    )


def test_why_a_task_is_not_running_names_upstream_and_the_paused_dag(
    api: TestClient, home: Home
) -> None:
    home.trigger("etl", run_id="r1")
    with session_scope(home.url) as session:
        session.execute(update(DagModel).where(DagModel.dag_id == "etl").values(is_paused=True))
    sign_in(api, "viewer")
    page = api.get("/dags/etl/runs/r1/tasks/load").text
    assert "Why it is not running" in page
    assert "DAG &#39;etl&#39; is paused" in page
    assert "waiting for extract (not started)" in page


def test_the_pages_say_what_is_missing_with_a_404(api: TestClient, home: Home) -> None:
    home.trigger("etl", run_id="r1")
    sign_in(api, "viewer")
    for path, named in [
        ("/dags/nope/runs/r1", "nope"),
        ("/dags/etl/runs/nope", "nope"),
        ("/dags/etl/runs/r1/tasks/nope", "no task &#39;nope&#39;"),
    ]:
        reply = api.get(path)
        assert reply.status_code == 404 and named in reply.text and "Not found" in reply.text


def test_a_page_needs_a_signed_in_browser(api: TestClient, home: Home) -> None:
    home.trigger("etl", run_id="r1")
    reply = api.get("/dags/etl/runs/r1", follow_redirects=False)
    assert reply.status_code == 303 and reply.headers["location"].startswith("/auth/login")


def test_clearing_and_marking_need_a_user_and_the_csrf_token(api: TestClient, home: Home) -> None:
    run_pk = home.trigger("etl", run_id="r1")
    token = sign_in(api, "viewer")
    path = "/dags/etl/runs/r1/tasks/extract/mark/success"
    assert api.post(path, data={"csrf_token": token}).status_code == 403
    token = sign_in(api, "user")
    assert api.post(path, data={}).status_code == 403
    assert api.post(path, data={"csrf_token": "forged"}).status_code == 403
    assert home.states(run_pk)["extract"] == TaskInstanceState.NONE
    reply = api.post(path, data={"csrf_token": token}, follow_redirects=False)
    assert reply.status_code == 303
    assert reply.headers["location"] == "/dags/etl/runs/r1/tasks/extract"
    assert home.states(run_pk)["extract"] == TaskInstanceState.SUCCESS
    assert "Mark success" in api.get("/dags/etl/runs/r1").text
    clear = api.post("/dags/etl/runs/r1/tasks/extract/clear", data={"csrf_token": token})
    assert clear.status_code == 200
    live = 'data-refresh="/dags/etl/runs/r1/tasks/extract/partials/live?map_index=-1"'
    assert live in clear.text  # the page follows the cleared task as it runs again
    part = api.get("/dags/etl/runs/r1/tasks/extract/partials/live?map_index=-1").text
    assert "state-badge" in part and "<html" not in part
    assert home.states(run_pk)["extract"] == TaskInstanceState.NONE
    api.post("/dags/etl/runs/r1/mark/failed", data={"csrf_token": token})
    assert home.run_state(run_pk) == "failed"
    api.post("/dags/etl/runs/r1/clear", data={"csrf_token": token})
    assert home.run_state(run_pk) == "queued"
    assert set(home.states(run_pk).values()) == {TaskInstanceState.NONE}


def test_the_pages_cost_the_same_whatever_the_run_size(api: TestClient, pages: Home) -> None:
    pages.trigger("fan", run_id="small")
    _mapped_run(pages, "large", 2000)
    _iterable_run(pages, "few", 3)
    _iterable_run(pages, "lots", 16194)
    sign_in(api, "viewer")
    run_page = [
        _statements(api, pages, f"/dags/{dag}/runs/{run}")
        for dag, run in [("fan", "small"), ("fan", "large"), ("items", "few"), ("items", "lots")]
    ]
    assert run_page[0] == run_page[1] <= 25 and run_page[2] == run_page[3] <= 25, run_page
    mapped = [
        _statements(api, pages, f"/dags/fan/runs/{r}/tasks/double") for r in ("small", "large")
    ]
    assert mapped[0] == mapped[1] <= 25, mapped
    iterable = [
        _statements(api, pages, f"/dags/items/runs/{r}/tasks/square") for r in ("few", "lots")
    ]
    assert iterable[0] == iterable[1] <= 25, iterable


def test_why_a_task_waits_names_the_full_pool_the_dags_limit_and_the_retry_time(
    api: TestClient, home: Home, as_role: Callable[[str], dict[str, str]]
) -> None:
    pool = {"name": "tiny", "slots": 1}
    assert api.post("/api/v2/pools", json=pool, headers=as_role("op")).status_code == 201
    home.trigger("solo", run_id="busy")
    home.trigger("solo", run_id="held")
    with session_scope(home.url) as session:
        rows = session.query(TaskInstance).filter_by(dag_id="solo")
        rows.filter_by(run_id="busy").update({"state": "running", "pool": "tiny"})
        rows.filter_by(run_id="held").update({"state": "scheduled", "pool": "tiny"})
    sign_in(api, "viewer")
    page = api.get("/dags/solo/runs/held/tasks/only").text
    assert "pool &#39;tiny&#39; has no open slot (1 of 1 in use)" in page
    assert "the DAG has 1 task instance(s) queued or running, its max_active_tasks is 1" in page
    due = dt.datetime(2031, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    with session_scope(home.url) as session:
        rows = session.query(TaskInstance).filter_by(dag_id="solo", run_id="held")
        rows.update({"state": "up_for_retry", "next_retry_at": due, "try_number": 1})
    page = api.get("/dags/solo/runs/held/tasks/only").text
    assert "the next try is due at 2031-01-02 03:04:05" in page


def test_an_iterable_tasks_page_sees_each_new_round(api: TestClient, pages: Home) -> None:
    _iterable_run(pages, "growing", 300)
    sign_in(api, "viewer")
    assert "<b>299</b> done" in api.get("/dags/items/runs/growing/tasks/square").text
    outcomes = [{"i": i, "f": f"f{i}", "s": "success"} for i in range(300, 400)]
    with session_scope(pages.url) as session:
        value = json.dumps({"generation": 0, "outcomes": outcomes})
        session.add(TaskStateValue(dag_id="items", run_id="growing", task_id="square",
                                   key=batch_key(3), value=value))  # fmt: skip
    assert "<b>399</b> done" in api.get("/dags/items/runs/growing/tasks/square").text
