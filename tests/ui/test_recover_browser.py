"""Clear and Mark in headless Chromium: the dialog lists what changes, the scope boxes change the
list, and confirming does exactly that (``api/pages/recover.py``, ``static/recover.js``).

Screenshots of the dialogs are saved under the test's tmp dir (``shoot``) to be looked at.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import expect
from sqlalchemy import select, update

from state.core.db import session_scope
from state.core.enums import DagRunState, TaskInstanceState
from state.core.models import DagRun, TaskInstance
from tests.state.harness import Home

Shoot = Callable[[Any, str], Path]
TI = TaskInstanceState

CHAIN = """
from tradewind import DAG, task


@task
def step():
    pass


with DAG("chain"):
    a = step.override(task_id="a")()
    b = step.override(task_id="b")()
    c = step.override(task_id="c")()
    d = step.override(task_id="d")()
    a >> b >> c
    a >> d
"""


def _chain(home: Home, *run_ids: str) -> dict[str, int]:
    home.write_dag(CHAIN, "chain.py")
    home.sync()
    pks = {run_id: home.trigger("chain", run_id=run_id) for run_id in run_ids}
    with session_scope(home.url) as session:
        session.execute(update(TaskInstance).values(state=TI.SUCCESS, try_number=1))
        session.execute(update(DagRun).values(state=DagRunState.FAILED))
    return pks


def _listed(page: Any) -> list[str]:
    return sorted(
        page.locator("#rc-list .rc-row").evaluate_all("rows => rows.map(r => r.dataset.key)")
    )


def test_clear_a_failed_task_with_its_downstream_after_confirming_the_list(
    sqlite_home: Home, page: Any, shoot: Shoot
) -> None:
    pks = _chain(sqlite_home, "r1")
    with session_scope(sqlite_home.url) as session:
        where = TaskInstance.run_id == "r1"
        session.execute(
            update(TaskInstance).where(where, TaskInstance.task_id == "b").values(state=TI.FAILED)
        )
        session.execute(
            update(TaskInstance)
            .where(where, TaskInstance.task_id == "c")
            .values(state=TI.UPSTREAM_FAILED)
        )
    page.goto("/dags/chain/runs/r1/tasks/b")
    page.click("#pg-task-live button[data-recover=clear]")
    page.wait_for_selector("#rc-list .rc-row")
    # Downstream is ticked by default: b and c, not a (upstream) nor d (a sibling).
    assert _listed(page) == ["chain/r1/b/-1", "chain/r1/c/-1"]
    assert page.inner_text("#rc-list .rc-count").strip() == "2 task instances will be cleared."
    shoot(page, "clear-dialog-downstream")
    page.uncheck("#rc-scope input[name=downstream]")
    expect(page.locator("#rc-list .rc-row")).to_have_count(1)
    assert _listed(page) == ["chain/r1/b/-1"]
    page.check("#rc-scope input[name=upstream]")
    page.check("#rc-scope input[name=downstream]")
    expect(page.locator("#rc-list .rc-row")).to_have_count(3)
    assert _listed(page) == ["chain/r1/a/-1", "chain/r1/b/-1", "chain/r1/c/-1"]
    page.uncheck("#rc-scope input[name=upstream]")
    expect(page.locator("#rc-list .rc-row")).to_have_count(2)
    page.click("#rc-confirm")
    page.wait_for_selector(".flash.ok")
    assert "Cleared 2 task instances." in page.inner_text(".flash.ok")
    shoot(page, "clear-done")
    assert sqlite_home.states(pks["r1"]) == {
        "a": TI.SUCCESS,
        "b": TI.NONE,
        "c": TI.NONE,
        "d": TI.SUCCESS,
    }
    assert sqlite_home.run_state(pks["r1"]) == DagRunState.QUEUED


def test_bulk_mark_three_runs_from_the_grid(sqlite_home: Home, page: Any, shoot: Shoot) -> None:
    pks = _chain(sqlite_home, "r1", "r2", "r3", "r4")
    page.goto("/dags/chain")
    page.wait_for_selector("#grid input.rc-pick")
    for run_id in ("r1", "r2", "r4"):
        page.check(f"#grid input.rc-pick[value={run_id}]")
    assert page.inner_text(".rc-picked") == "3 selected"
    page.click(".rc-bulk button[data-recover=mark][data-state=success]")
    page.wait_for_selector("#rc-list .rc-count")
    assert page.inner_text("#rc-title") == "Mark success: 3 selected runs"
    assert "3 runs will be marked success" in page.inner_text("#rc-list .rc-count")
    assert page.locator("#rc-list .rc-runs li").count() == 3
    assert page.locator("#rc-scope").is_hidden()  # a whole run's mark has no scope
    shoot(page, "bulk-mark-runs-dialog")
    page.click("#rc-confirm")
    page.wait_for_selector(".flash.ok")
    assert "Marked 3 runs success" in page.inner_text(".flash.ok")
    with session_scope(sqlite_home.url) as session:
        states = dict(session.execute(select(DagRun.run_id, DagRun.state)).all())
    assert states == {"r1": "success", "r2": "success", "r3": "failed", "r4": "success"}
    assert sqlite_home.run_state(pks["r3"]) == DagRunState.FAILED


def test_bulk_clear_picked_task_instances_of_a_run(
    sqlite_home: Home, page: Any, shoot: Shoot
) -> None:
    pks = _chain(sqlite_home, "r1")
    page.goto("/dags/chain/runs/r1")
    page.check("#pg-tasks input.rc-pick[value=a]")
    page.check("#pg-tasks input.rc-pick[value=d]")
    page.click(".rc-bulk button[data-recover=clear]")
    page.wait_for_selector("#rc-list .rc-row")
    page.uncheck("#rc-scope input[name=downstream]")
    expect(page.locator("#rc-list .rc-row")).to_have_count(2)
    assert _listed(page) == ["chain/r1/a/-1", "chain/r1/d/-1"]
    shoot(page, "bulk-clear-tis-dialog")
    page.click("#rc-confirm")
    page.wait_for_selector(".flash.ok")
    assert sqlite_home.states(pks["r1"]) == {
        "a": TI.NONE,
        "b": TI.SUCCESS,
        "c": TI.SUCCESS,
        "d": TI.NONE,
    }
