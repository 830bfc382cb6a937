"""The run and task pages in headless chromium: a log followed live, a clear seen through.

Each test saves screenshots under its tmp dir (``shoot``) to be looked at; a large run (2,000
mapped task instances, an iterable task of 16,194 items) is shot too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import update

from api.logs import try_log
from state.core.db import session_scope
from state.core.enums import TaskInstanceState
from state.core.models import TaskInstance, TaskStateValue, utcnow
from state.records.checkpoints import batch_key
from tests.state.harness import Home

Shoot = Callable[[Any, str], Path]

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


def _set(home: Home, run_id: str, task_id: str, **values: Any) -> None:
    with session_scope(home.url) as session:
        session.execute(
            update(TaskInstance)
            .where(TaskInstance.run_id == run_id, TaskInstance.task_id == task_id)
            .values(**values)
        )


def _running_with_a_log(home: Home, run_id: str) -> Path:
    home.trigger("solo", run_id=run_id)
    _set(home, run_id, "only", state="running", try_number=1, start_date=utcnow(), hostname="w1")
    path = try_log(home.settings.logs_folder, ("solo", run_id, "only", -1), 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"line {n} of the try\n" for n in range(5)))
    return path


def test_a_running_tries_log_grows_on_the_page(sqlite_home: Home, page: Any, shoot: Shoot) -> None:
    log = _running_with_a_log(sqlite_home, "live")
    page.goto("/dags/solo/runs/live/tasks/only")
    page.wait_for_selector("#pg-log:has-text('line 4 of the try')")
    assert page.locator(".pg-live").is_visible()
    with log.open("a") as more:
        more.write("the try goes on\nand is nearly done\n")
    page.wait_for_selector("#pg-log:has-text('and is nearly done')", timeout=60_000)
    text = page.locator("#pg-log").inner_text()
    assert text.count("line 0 of the try") == 1  # appended once, never read twice
    shoot(page, "task-live-log")


def test_a_long_log_opens_on_its_tail_and_pages_back(
    sqlite_home: Home, page: Any, shoot: Shoot
) -> None:
    log = _running_with_a_log(sqlite_home, "long")
    with log.open("a") as more:  # about 1.3 MB: five windows of the page
        more.write("".join(f"filler line {n:06} of a long log\n" for n in range(40000)))
        more.write("the last line so far\n")
    page.goto("/dags/solo/runs/long/tasks/only")
    page.wait_for_selector("#pg-log:has-text('the last line so far')")
    assert "line 0 of the try" not in page.locator("#pg-log").inner_text()
    assert "filler line 000000" not in page.locator("#pg-log").inner_text()
    shoot(page, "task-long-log-tail")
    earlier = page.locator("#pg-log-earlier")
    for _ in range(10):
        if not earlier.is_visible():
            break
        earlier.click()
        # A locator, not wait_for_function: the page's CSP forbids the eval that one needs.
        page.wait_for_selector("#pg-log-earlier:not([disabled])", state="attached")
    assert not earlier.is_visible()  # the log's start is reached: nothing earlier
    text = page.locator("#pg-log").inner_text()
    assert text.startswith("line 0 of the try")
    assert text.count("filler line 020000 of a long log") == 1  # each window read once
    assert text.endswith("the last line so far\n") or text.endswith("the last line so far")
    with log.open("a") as more:
        more.write("and one more\n")
    page.wait_for_selector("#pg-log:has-text('and one more')", timeout=60_000)


def test_a_long_follow_keeps_its_window_and_lets_go_of_older_lines(
    sqlite_home: Home, page: Any
) -> None:
    log = _running_with_a_log(sqlite_home, "follow")
    page.goto("/dags/solo/runs/follow/tasks/only")
    page.wait_for_selector("#pg-log:has-text('line 4 of the try')")
    assert page.locator("#pg-log").get_attribute("data-window") == str(4 * 1024 * 1024)
    # The page keeps 4 MiB; a window of 2 KB shows the same rule without writing megabytes.
    page.evaluate("document.getElementById('pg-log').dataset.window = '2000'")
    for n in range(4):
        with log.open("a") as more:
            more.write("".join(f"batch {n} line {k:02} of the follow\n" for k in range(30)))
        page.wait_for_selector(f"#pg-log:has-text('batch {n} line 29')", timeout=60_000)
    text = page.locator("#pg-log").inner_text()
    assert "line 0 of the try" not in text and "batch 0 line 00" not in text  # let go
    assert "batch 3 line 29 of the follow" in text
    earlier = page.locator("#pg-log-earlier")
    assert earlier.is_visible()
    earlier.click()
    page.wait_for_selector("#pg-log:has-text('batch 0 line 00')")  # paged back on demand


def test_a_cleared_task_is_shown_running_again(sqlite_home: Home, page: Any, shoot: Shoot) -> None:
    run_pk = sqlite_home.trigger("solo", run_id="again")
    _set(sqlite_home, "again", "only", state="failed", try_number=1, start_date=utcnow(),
         end_date=utcnow(), error="RuntimeError: the disk is full")  # fmt: skip
    page.goto("/dags/solo/runs/again/tasks/only")
    page.wait_for_selector(".state-badge.state-failed")
    shoot(page, "task-failed")
    page.click("button:has-text('Clear')")
    page.wait_for_selector("#rc-list .rc-row")  # the confirmation lists it first
    page.click("#rc-confirm")
    page.wait_for_selector("#pg-task-live .state-badge.state-none")
    assert sqlite_home.states(run_pk)["only"] == TaskInstanceState.NONE
    sqlite_home.schedule(run_pk)  # the scheduler's pass queues it again
    page.wait_for_selector("#pg-task-live .state-badge.state-queued", timeout=60_000)  # no reload
    shoot(page, "task-cleared-queued")
    page.goto("/dags/solo/runs/again")
    page.wait_for_selector("#pg-tasks .state-badge.state-queued")
    shoot(page, "run-cleared-queued")


def test_the_pages_of_small_and_large_runs(sqlite_home: Home, page: Any, shoot: Shoot) -> None:
    sqlite_home.write_dag(ITERATE_DAG, "items.py")
    sqlite_home.sync()
    sqlite_home.trigger("etl", run_id="small", conf={"day": "2026-12-01", "rows": 3})
    _set(sqlite_home, "small", "extract", state="success", try_number=1, start_date=utcnow(),
         end_date=utcnow(), hostname="worker-1")  # fmt: skip
    page.goto("/dags/etl/runs/small")
    page.wait_for_selector("#pg-tasks")
    shoot(page, "run-small")
    page.goto("/dags/etl/runs/small/tasks/load")
    page.wait_for_selector("#pg-waiting")
    shoot(page, "task-waiting")

    _mapped_run(sqlite_home, "wide", 2000)
    page.goto("/dags/etl/runs/wide")
    page.wait_for_selector("text=2,000 map indexes")
    shoot(page, "run-2000-mapped")
    page.goto("/dags/etl/runs/wide/tasks/transform.double")
    page.wait_for_selector("text=Failed map indexes")
    shoot(page, "task-2000-mapped")

    _iterable_run(sqlite_home, "many", 16194)
    page.goto("/dags/items/runs/many")
    page.wait_for_selector("#pg-tasks")
    shoot(page, "run-16194-items")
    page.goto("/dags/items/runs/many/tasks/square")
    page.wait_for_selector("text=Failed items")
    shoot(page, "task-16194-items")
    page.goto("/dags/items/runs/nope")
    page.wait_for_selector("text=Not found")
    shoot(page, "run-missing")


def _mapped_run(home: Home, run_id: str, items: int) -> None:
    home.trigger("etl", run_id=run_id)
    now = utcnow()
    with session_scope(home.url) as session:
        session.query(TaskInstance).filter_by(run_id=run_id, task_id="transform.double").delete()
        session.add_all(
            TaskInstance(dag_id="etl", run_id=run_id, task_id="transform.double", map_index=i,
                         state=_mapped_state(i), try_number=1, start_date=now,
                         end_date=None if _mapped_state(i) == "running" else now,
                         error="ValueError: bad row" if i % 400 == 7 else None)
            for i in range(items)
        )  # fmt: skip


def _mapped_state(index: int) -> str:
    if index % 400 == 7:
        return "failed"
    return "running" if index > 1800 else "success"


def _iterable_run(home: Home, run_id: str, total: int, per_round: int = 100) -> None:
    home.trigger("items", run_id=run_id)
    _set(home, run_id, "numbers", state="success", try_number=1)
    _set(home, run_id, "square", items_total=total, try_number=1, state="running",
         start_date=utcnow(), hostname="worker-2")  # fmt: skip
    with session_scope(home.url) as session:
        for number, start in enumerate(range(0, total - 500, per_round)):
            outcomes = [
                {"i": i, "f": f"f{i}", "s": "failed", "e": f"KeyError: 'price' in row {i}"}
                if i % 1000 == 3
                else {"i": i, "f": f"f{i}", "s": "success"}
                for i in range(start, min(start + per_round, total))
            ]
            value = json.dumps({"generation": 0, "outcomes": outcomes})
            session.add(TaskStateValue(dag_id="items", run_id=run_id, task_id="square",
                                       key=batch_key(number), value=value))  # fmt: skip
