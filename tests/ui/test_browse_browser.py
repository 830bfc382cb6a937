"""The browses in headless chromium, worked as a person works them: the Task Instances browse
filtered to one DAG's failed tries, a DAG's Runs tab filtered, the DAG list searched at a few
thousand DAGs, a backfill previewed before it is made. Each step leaves a screenshot under the
test's tmp dir (``UI_FIND_SHOTS=folder`` copies them there, to look at)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.state.harness import Home
from tests.ui.browse_data import add_many_dags, seed

Shoot = Callable[[Any, str], Path]


def _kept(shoot: Shoot) -> Shoot:
    """``shoot``, and a copy in ``$UI_FIND_SHOTS`` when it is set."""
    folder = os.environ.get("UI_FIND_SHOTS")

    def both(page: Any, name: str) -> Path:
        path = shoot(page, name)
        if folder:
            shutil.copy(path, Path(folder) / path.name)
        return path

    return both


def _cells(page: Any, selector: str) -> list[str]:
    return [text.strip() for text in page.locator(selector).all_inner_texts()]


def test_filter_the_task_instances_to_one_dags_failed_tries(
    page: Any, sqlite_home: Home, shoot: Shoot
) -> None:
    seed(sqlite_home)
    shoot = _kept(shoot)
    page.click("nav.main a:text-is('Task instances')")
    page.wait_for_url("**/task_instances")
    shoot(page, "task-instances")
    page.fill("input[name=dag_id]", "etl")
    page.select_option("#ti-state", ["failed"])
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**/task_instances?*state=failed*")
    assert "dag_id=etl" in page.url
    rows = page.locator("table.ti-browse tbody tr")
    assert rows.count() == 2
    assert set(_cells(page, "table.ti-browse tbody tr td:nth-child(2)")) == {"etl"}
    assert set(_cells(page, "table.ti-browse tbody tr td:nth-child(5)")) == {"failed"}
    # The retried one shows its second try; each row links to its task page.
    assert "2 of 2" in page.locator("tr[data-task-id=load]").inner_text()
    boxes = page.locator("input[name=ti][form=ti-selection]")
    assert boxes.count() == 2
    assert "etl|scheduled__2026-12-02|load|-1" in [b.get_attribute("value") for b in boxes.all()]
    shoot(page, "task-instances-etl-failed")
    page.click("th a.sort:has-text('Start')")
    assert "order_by=-start_date" in page.url and "state=failed" in page.url
    assert _cells(page, "table.ti-browse tbody tr td:nth-child(4)")[0].startswith("extract")
    page.click("th a.sort:has-text('Start')")
    assert "order_by=start_date" in page.url
    assert _cells(page, "table.ti-browse tbody tr td:nth-child(4)")[0].startswith("load")
    page.click("tr[data-task-id=load] td:nth-child(4) a")
    page.wait_for_url("**/dags/etl/runs/scheduled__2026-12-02/tasks/load")
    page.goto("/task_instances?dag_id=nope")
    assert "No task instance matches these filters" in page.locator("td.empty").inner_text()
    for name in ("/dag_runs", "/xcoms", "/assets", "/assets/1"):
        page.goto(name)
        shoot(page, name.strip("/").replace("/", "-"))


def test_the_runs_tab_filters_by_state_type_and_date(
    page: Any, sqlite_home: Home, shoot: Shoot
) -> None:
    seed(sqlite_home)
    shoot = _kept(shoot)
    page.goto("/dags/etl")
    page.click("nav.tabs a:text-is('Runs')")
    page.wait_for_url("**/dags/etl/runs")
    assert page.locator("table.runs-browse tbody tr").count() == 4
    shoot(page, "dag-runs-tab")
    page.select_option("#run-state", ["failed"])
    page.click("form.filters button[type=submit]")
    run_ids = _cells(page, "table.runs-browse tbody td:nth-child(1)")
    assert run_ids == ["manual__2026-12-03", "scheduled__2026-12-02"]
    page.select_option("select[name=run_type]", "scheduled")
    page.click("form.filters button[type=submit]")
    assert "run_type=scheduled" in page.url and "state=failed" in page.url
    assert _cells(page, "table.runs-browse tbody td:nth-child(1)") == ["scheduled__2026-12-02"]
    page.goto("/dags/etl/runs?logical_date_gte=2026-12-02&order_by=logical_date")
    assert _cells(page, "table.runs-browse tbody td:nth-child(1)")[0] == "scheduled__2026-12-02"
    page.goto("/dags/etl/runs?logical_date_gte=yesterday")
    assert "is not a date" in page.locator(".flash.error").inner_text()
    assert page.locator("table.runs-browse tbody tr").count() == 4
    shoot(page, "dag-runs-bad-date")


def test_search_the_dag_list_at_a_few_thousand_dags(
    page: Any, sqlite_home: Home, shoot: Shoot
) -> None:
    seed(sqlite_home)
    add_many_dags(sqlite_home, 3000)
    shoot = _kept(shoot)
    page.goto("/dags")
    assert "3,002 DAGs" in page.locator(".toolbar").first.inner_text()
    assert page.locator("table.dags tbody tr").count() == 25
    page.fill("input[name=search]", "ledger_29")
    page.click("form.filters button[type=submit]")
    shown = _cells(page, "table.dags a.dag-link")
    assert len(shown) == 20 and all(dag_id.startswith("ledger_29") for dag_id in shown)
    shoot(page, "dags-search")
    page.goto("/dags")
    page.select_option("select[name=last_dag_run_state]", "failed")
    page.select_option("select[name=order_by]", "-last_run_start_date")
    page.click("form.filters button[type=submit]")
    assert _cells(page, "table.dags a.dag-link") == ["solo"]  # etl's newest run is running
    shoot(page, "dags-failed")
    page.goto("/dags?tags=growth&page=3")
    assert "51\u201375 of 600" in page.locator("nav.pager").inner_text()
    page.click("nav.pager a:has-text('Next')")
    assert "tags=growth" in page.url and "page=4" in page.url
    shoot(page, "dags-tag-paged")


def test_a_backfill_is_previewed_then_created_paused_and_cancelled(
    page: Any, sqlite_home: Home, shoot: Shoot
) -> None:
    sqlite_home.write_dag(DAILY, name="daily.py")
    sqlite_home.sync()
    shoot = _kept(shoot)
    page.goto("/backfills")
    assert "No backfills yet" in page.locator("td.empty").inner_text()
    page.click("summary:has-text('New backfill')")
    page.fill("#backfill-dag", "daily")
    page.fill("#backfill-from", "2026-11-01")
    page.fill("#backfill-to", "2026-11-05")
    page.click("button[value=preview]")
    preview = page.locator("table.backfill-preview tbody tr")
    assert preview.count() == 5
    assert "scheduled" not in preview.first.inner_text()
    shoot(page, "backfill-preview")
    page.click("button[value=create]")
    page.wait_for_url("**/backfills")
    assert "5 runs queued" in page.locator(".flash").inner_text()
    page.click("tr[data-backfill-id='1'] button:has-text('Pause')")
    assert page.locator("tr[data-backfill-id='1']").get_attribute("data-status") == "paused"
    shoot(page, "backfills")
    page.click("tr[data-backfill-id='1'] button:has-text('Cancel')")
    assert page.locator("tr[data-backfill-id='1']").get_attribute("data-status") == "cancelled"
    page.goto("/dags/daily/runs?run_type=backfill")
    assert page.locator("table.runs-browse tbody tr").count() == 5


DAILY = """
import datetime as dt

from tradewind import DAG, task


@task
def step() -> None:
    pass


with DAG("daily", schedule="@daily", start_date=dt.datetime(2026, 10, 1, tzinfo=dt.UTC)):
    step()
"""
