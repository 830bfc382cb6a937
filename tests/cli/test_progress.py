"""Item-level progress of iterable tasks: ``runs show`` (table and ``--json``), what reading it
costs the store, and the item bar of the live view of ``dags trigger --wait``.
"""

from __future__ import annotations

import io
import json
import subprocess
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from sqlalchemy import event
from typer.testing import Result

from cli.render import RunProgress
from cli.watch import read_progress
from state.core.db import get_engine
from state.views.progress import ItemsProgress
from tradewind.settings import get_settings

from .conftest import CliEnv

Cli = Callable[..., Result]
RunCli = Callable[..., subprocess.CompletedProcess[str]]

#: ``count`` items; item 7 fails its first try (the retry runs it again), item ``broken`` fails
#: every try (with ``broken`` set, the task instance fails and its checkpoints stay).
ITEMS_DAG = """
from tradewind import dag, get_current_context, task


@task
def make(params: dict | None = None) -> list[int]:
    return list(range(int((params or {})["count"])))


@task(task_concurrency=8, retries=1, retry_delay=0)
def work(n: int) -> int:
    params = get_current_context()["params"]
    if n == 7 and get_current_context()["ti"].try_number == 1:
        raise ConnectionError("item 7 fails its first try")
    if n == params["broken"]:
        raise ValueError(f"item {n} always fails")
    return n * 2


@task
def total(values: list[int]) -> int:
    return sum(values)


@dag(dag_id="items", params={"count": 50, "broken": -1})
def items():
    total(work.iterate(n=make()))


items()
"""


def add_items_dag(env: CliEnv) -> None:
    (env.dags / "items.py").write_text(textwrap.dedent(ITEMS_DAG))


def rows_by_task(shown: subprocess.CompletedProcess[str] | Result) -> dict[str, dict[str, Any]]:
    return {row["task_id"]: row for row in json.loads(shown.stdout)["task_instances"]}


@contextmanager
def counted_selects() -> Iterator[list[str]]:
    """The SELECT statements sent to the store's engine meanwhile."""
    statements: list[str] = []

    def count(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            statements.append(statement)

    engine = get_engine(get_settings().sql_url)
    event.listen(engine, "before_cursor_execute", count)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", count)


def test_runs_show_reports_the_items_of_an_iterable_task(run_cli: RunCli, env: CliEnv) -> None:
    add_items_dag(env)

    tested = run_cli("dags", "test", "items", "--run-id", "r1", "--no-logs")
    shown = run_cli("runs", "show", "items", "r1", "--json")
    table = run_cli("runs", "show", "items", "r1")

    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "work try 1: up_for_retry" in tested.stdout
    assert "work try 2: success" in tested.stdout
    assert "50/50 done, 0 failed, 0 skipped" in tested.stdout  # dags test's summary table
    assert shown.returncode == 0, shown.stderr
    rows = rows_by_task(shown)
    assert {key: value for key, value in rows["work"].items() if key.startswith("items_")} == {
        "items_done": 50,
        "items_failed": 0,
        "items_skipped": 0,
        "items_total": 50,
    }
    for task_id in ("make", "total"):  # not iterable: no items
        assert [rows[task_id][key] for key in ("items_done", "items_total")] == [None, None]
    assert table.returncode == 0, table.stderr
    [work_line] = [line for line in table.stdout.splitlines() if " work " in line]
    assert "50/50 done, 0 failed, 0 skipped" in work_line
    assert "items" in table.stdout.splitlines()[2]  # the header row (after title and border)


def test_reading_the_items_costs_the_same_queries_for_10_or_1000(
    run_cli: RunCli, cli: Cli, env: CliEnv
) -> None:
    add_items_dag(env)
    for count in (10, 1000):
        conf = json.dumps({"count": count, "broken": 3})
        tested = run_cli(
            "dags", "test", "items", "--run-id", f"n{count}", "--conf", conf, "--no-logs"
        )
        assert tested.returncode == 1, tested.stdout + tested.stderr  # item 3 fails every try

    shows, polls = {}, {}
    for count in (10, 1000):
        with counted_selects() as statements:
            shown = cli("runs", "show", "items", f"n{count}", "--json")
        shows[count] = len(statements)
        assert shown.exit_code == 0, shown.output
        work = rows_by_task(shown)["work"]
        assert (work["state"], work["items_total"]) == ("failed", count)
        # The failed task instance keeps its checkpoints: every item's outcome is read from them.
        assert (work["items_done"], work["items_failed"]) == (count - 1, 1)

        with counted_selects() as statements:
            run_state, _, items = read_progress(get_settings().sql_url, "items", f"n{count}")
        polls[count] = len(statements)
        assert run_state == "failed"
        assert items == [ItemsProgress(done=count - 1, failed=1, skipped=0, total=count)]

    assert shows[10] == shows[1000]
    # The run and its version, the counts by state, the iterable ones, their items (2).
    assert polls[10] == polls[1000] == 5


def render(view: RunProgress) -> str:
    out = io.StringIO()
    Console(file=out, width=120, color_system=None).print(view)
    return out.getvalue()


def test_the_live_view_shows_an_item_bar_while_the_run_has_iterable_task_instances() -> None:
    view = RunProgress("crawl", "r1")

    view.update("running", ["success", "running", "none"])
    without_items = render(view)
    view.update(
        "running",
        ["success", "running", "running", "none"],
        [
            ItemsProgress(done=1200, failed=3, skipped=1, total=3000),
            ItemsProgress(done=40, total=100),
        ],
    )
    with_items = render(view)
    view.update("running", ["running"], [ItemsProgress(done=10, total=50), ItemsProgress()])
    partly_counted = render(view)
    view.update("running", ["running"], [ItemsProgress()])
    uncounted = render(view)

    assert "items" not in without_items
    assert "1/3" in without_items
    [bar_line] = [line for line in with_items.splitlines() if line.startswith("items ")]
    assert "1244/3100" in bar_line  # finished (done + failed + skipped) over the total
    assert "3 failed" in bar_line and "1 skipped" in bar_line
    assert "━" in bar_line  # the bar itself
    assert "10/50+" in partly_counted  # one of them has not counted its items yet
    assert "0/?" in uncounted
