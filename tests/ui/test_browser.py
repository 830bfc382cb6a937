"""The UI in headless chromium: sign in, the DAGs, trigger from the form, the grid turning
green without a reload while the run is driven (``tradewind dags test`` on the same store),
the paused switch, the graph. Each step leaves a screenshot under the test's tmp dir."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.state.harness import Home

Shoot = Callable[[Any, str], Path]


def _drive(home: Home, run_id: str) -> subprocess.CompletedProcess[str]:
    """Run the queued run to its end in another process (`tradewind dags test --run-id`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRADEWIND_")}
    env |= {
        "TRADEWIND_HOME": str(home.settings.resolved_home),
        "TRADEWIND_DAGS_FOLDER": str(home.dags),
    }
    argv = [sys.executable, "-m", "cli", "dags", "test", "etl", "--run-id", run_id]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_trigger_from_the_form_and_watch_the_grid_turn_green(
    page: Any, sqlite_home: Home, shoot: Shoot
) -> None:
    shoot(page, "dags")
    page.click("a.dag-link:text-is('etl')")
    page.wait_for_url("**/dags/etl")
    shoot(page, "dag-grid-empty")
    page.click("a.button:has-text('Trigger')")
    page.fill("#field-rows", "0")
    page.select_option("#field-mode", "delta")
    page.click("form.trigger button[type=submit]")
    assert "is less than the minimum of 1" in page.locator("#field-rows-error").inner_text()
    shoot(page, "trigger-errors")
    page.fill("#field-rows", "2")
    page.fill("#field-run-id", "from_browser")
    page.click("form.trigger button[type=submit]")
    page.wait_for_url("**/dags/etl")
    assert "run from_browser is queued" in page.locator(".flash").inner_text()
    page.evaluate("window.notReloaded = true")
    extract = page.locator("a[href='/dags/etl/runs/from_browser/tasks/extract']")
    assert extract.get_attribute("data-state") == "none"
    shoot(page, "grid-queued")
    done = _drive(sqlite_home, "from_browser")
    assert done.returncode == 0, done.stdout + done.stderr
    # A locator, not wait_for_function: the pages' CSP refuses the string eval that needs.
    green = page.locator("a.run-bar.state-success[href='/dags/etl/runs/from_browser']")
    green.wait_for(timeout=60_000)
    assert extract.get_attribute("data-state") == "success"
    assert page.evaluate("window.notReloaded") is True
    shoot(page, "grid-green")


def test_a_group_folds_and_stays_folded_across_refreshes(
    page: Any, sqlite_home: Home, shoot: Shoot
) -> None:
    sqlite_home.trigger("etl", run_id="r1")
    page.goto("/dags/etl")
    row = page.locator("tr[data-row-id='transform.double']")
    assert row.is_visible()
    page.click("button.group-toggle[data-group='transform']")
    assert row.is_hidden()
    page.evaluate(  # one refresh of the grid goes by
        "new Promise(done => document.addEventListener('tradewind:refreshed', done, {once: true}))"
    )
    assert page.locator("tr[data-row-id='transform.double']").is_hidden()
    shoot(page, "grid-folded")


def test_the_paused_switch(page: Any, sqlite_home: Home, shoot: Shoot) -> None:
    switch = page.locator("tr[data-dag-id='solo'] button.toggle")
    assert switch.get_attribute("aria-pressed") == "false"
    switch.click()
    page.wait_for_selector("tr[data-dag-id='solo'].paused")
    assert sqlite_home.dag_model("solo").is_paused
    shoot(page, "dags-paused")
    page.locator("tr[data-dag-id='solo'] button.toggle").click()
    page.wait_for_selector("tr[data-dag-id='solo']:not(.paused)")
    assert not sqlite_home.dag_model("solo").is_paused


def test_the_graph_code_and_details_tabs(page: Any, sqlite_home: Home, shoot: Shoot) -> None:
    page.goto("/dags/etl?tab=graph")
    assert page.locator("svg.graph .node").count() == 3
    shoot(page, "graph")
    page.goto("/dags/etl?tab=code")
    shoot(page, "code")
    page.goto("/dags/etl?tab=details")
    shoot(page, "details")


def test_a_grid_of_several_runs_with_a_mapped_task_split_by_state(
    page: Any, sqlite_home: Home, shoot: Shoot
) -> None:
    from state.core.db import session_scope
    from state.core.enums import TaskInstanceState as TI
    from state.core.models import TaskInstance

    mixes = [[TI.SUCCESS] * 5, [TI.SUCCESS] * 3 + [TI.FAILED] * 2, [TI.RUNNING, TI.QUEUED, TI.NONE]]
    for index, mix in enumerate(mixes * 3):
        run_id = f"run_{index}"
        sqlite_home.trigger("etl", run_id=run_id)
        with session_scope(sqlite_home.url) as session:
            query = session.query(TaskInstance).filter_by(run_id=run_id)
            query.filter_by(task_id="extract").update({"state": TI.SUCCESS})
            query.filter_by(task_id="transform.double").delete()
            session.add_all(
                TaskInstance(
                    dag_id="etl", run_id=run_id, task_id="transform.double", map_index=i, state=s
                )
                for i, s in enumerate(mix)
            )
    page.goto("/dags/etl")
    cell = page.locator("a[href='/dags/etl/runs/run_1/tasks/transform.double']")
    assert cell.get_attribute("title") == "transform.double: failed 2, success 3"
    assert cell.locator("span").count() == 2
    shoot(page, "grid-mixed")
    page.goto("/dags")
    shoot(page, "dags-with-runs")


def test_the_resource_pages(page: Any, sqlite_home: Home, shoot: Shoot) -> None:
    page.click("nav.main >> text=Pools")
    page.click("details.editor > summary")
    page.fill("#pool-name", "etl_pool")
    page.fill("#pool-slots", "8")
    page.click("details.editor button[type=submit]")
    page.wait_for_selector("tr[data-pool='etl_pool']")
    shoot(page, "pools")
    page.click("nav.main >> text=Variables")
    page.click("details.editor > summary")
    page.fill("#var-key", "api_token")
    page.fill("#var-value", "s3cr3t")
    page.check("#var-secret")
    page.click("details.editor button[type=submit]")
    page.wait_for_selector("tr[data-key='api_token']")
    assert "s3cr3t" not in page.content()
    shoot(page, "variables")
    page.click("nav.main >> text=Connections")
    page.click("details.editor > summary")
    page.fill("#conn-id", "warehouse")
    page.fill("#conn-host", "db.internal")
    page.fill("#conn-password", "hunter2")
    page.click("details.editor button[type=submit]")
    page.wait_for_selector("tr[data-conn-id='warehouse']")
    assert "hunter2" not in page.content()
    shoot(page, "connections")
    page.click("nav.main >> text=Users")
    shoot(page, "users")


def test_a_wide_grid_pages_its_rows_and_a_grouped_one_folds(
    page: Any, sqlite_home: Home, shoot: Shoot
) -> None:
    from state.core.db import session_scope
    from state.core.enums import TaskInstanceState as TI
    from state.core.models import TaskInstance
    from tests.ui.test_dag_page import WIDE_DAG
    from tests.ui.test_grid_window import GROUPED_DAG

    sqlite_home.write_dag(WIDE_DAG, "wide.py")
    sqlite_home.write_dag(GROUPED_DAG, "grouped.py")
    sqlite_home.sync()
    cycle = [TI.SUCCESS, TI.SUCCESS, TI.FAILED, TI.RUNNING, TI.UP_FOR_RETRY, TI.SKIPPED]
    for index in range(25):
        sqlite_home.trigger("wide", run_id=f"w{index:02}")
        with session_scope(sqlite_home.url) as session:
            query = session.query(TaskInstance).filter_by(dag_id="wide", run_id=f"w{index:02}")
            if index < 23:  # the last two runs are still to be scheduled
                query.update({"state": cycle[index % len(cycle)]})
    page.goto("/dags/wide")
    assert page.locator("table.grid tbody tr").count() == 50
    assert page.locator("nav.grid-rows").first.inner_text().count("Rows 1\N{EN DASH}50 of 200") == 1
    shoot(page, "grid-wide-rows-1")
    page.locator("nav.grid-rows a", has_text="Next rows").first.click()
    page.wait_for_url("**/dags/wide?runs=25&rows=2")
    assert page.locator("tr[data-row-id='t050']").is_visible()
    shoot(page, "grid-wide-rows-2")

    for index, mix in enumerate([[TI.SUCCESS, TI.SUCCESS], [TI.SUCCESS, TI.FAILED], [TI.RUNNING]]):
        run_id = f"g{index}"
        sqlite_home.trigger("grouped", run_id=run_id)
        with session_scope(sqlite_home.url) as session:
            query = session.query(TaskInstance).filter_by(dag_id="grouped", run_id=run_id)
            query.filter(TaskInstance.task_id != "fan").update({"state": mix[0]})
            query.filter_by(task_id="fan").delete()
            session.add_all(
                TaskInstance(dag_id="grouped", run_id=run_id, task_id="fan", map_index=i, state=s)
                for i, s in enumerate(mix)
            )
    page.goto("/dags/grouped?rows=2")
    assert page.locator("tr[data-row-id='fan'] a.cell.multi").count() == 3
    shoot(page, "grid-grouped-rows-2")
    page.goto("/dags/grouped")
    page.click("button.group-toggle[data-group='g0']")
    assert page.locator("tr[data-row-id='g0.t00']").is_hidden()
    shoot(page, "grid-grouped-folded")
