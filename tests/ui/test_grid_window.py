"""The grid's window of rows: a DAG's rows a page at a time (``?rows=N``), a group's cell
counting its tasks outside the window, the poll following the same window, the layout made
once per structure version, and a request's statements the same whatever the DAG's size."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from fastapi.testclient import TestClient

from api.pages.grid_model import (
    GRID_ROWS,
    Row,
    RowWindow,
    build_grid,
    counted_keys,
    grid_rows,
)
from state.core.db import session_scope
from state.core.enums import DagRunState, TaskInstanceState
from state.core.models import TaskInstance
from state.core.structure import structure_of
from state.views.overview import GridCounts, RunSummary, grid_cells, recent_runs
from tests.state.harness import Home, counting_statements

Client = Callable[[str], TestClient]
TI = TaskInstanceState

# 97 rows: g0 (with a nested group) and g1, g2 of 30 tasks each, then a mapped task.
GROUPED_DAG = """
from tradewind import DAG, TaskGroup, task


@task
def step(x: int = 0) -> int:
    return x


@task
def numbers() -> list[int]:
    return [1, 2]


with DAG("grouped"):
    for g in range(3):
        with TaskGroup(f"g{g}"):
            for i in range(30):
                step.override(task_id=f"t{i:02d}")()
            if g == 0:
                with TaskGroup("inner"):
                    step.override(task_id="deep")()
    step.override(task_id="fan").expand(x=numbers())
"""


def _grouped(home: Home) -> None:
    home.write_dag(GROUPED_DAG, "grouped.py")
    home.sync()


def _set(home: Home, run_id: str, task_id: str, state: TI) -> None:
    with session_scope(home.url) as session:
        query = session.query(TaskInstance).filter_by(run_id=run_id, task_id=task_id)
        query.update({"state": state})


def _rows_of(html: str) -> list[str]:
    return [part.split('"', 1)[0] for part in html.split('data-row-id="')[1:]]


def test_the_rows_keep_the_structure_order_each_group_before_its_own(home: Home) -> None:
    _grouped(home)
    structure = structure_of(home.dag_model("grouped"))
    rows = grid_rows(structure)
    ids = [row.row_id for row in rows]
    assert ids[:4] == ["g0", "g0.inner", "g0.inner.deep", "g0.t00"]
    assert ids.index("g1") == 33 and ids.index("g2") == 64
    assert ids[-2:] == ["numbers", "fan"]  # fan maps over numbers' result: it comes after
    assert len(ids) == 97
    g0 = rows[0]
    assert g0.is_group and len(g0.tasks) == 31 and rows[2].parents == ("g0", "g0.inner")
    assert grid_rows(structure) is rows  # laid out once per structure version


def test_a_window_names_its_rows_and_stays_within_them() -> None:
    assert (RowWindow.at(1, 97).first, RowWindow.at(1, 97).last) == (1, GRID_ROWS)
    last = RowWindow.at(2, 97)
    assert (last.first, last.last, last.previous, last.next) == (51, 97, 1, None)
    assert RowWindow.at(9, 97) == last  # past the end: the last page
    assert RowWindow.at(0, 97).page == 1
    empty = RowWindow.at(1, 0)
    assert (empty.first, empty.last, empty.next) == (0, 0, None)


def test_a_cell_summarises_its_states_and_its_html_escapes_the_ids() -> None:
    rows = (
        Row("g", "g", 0, is_group=True, tasks=("g.<b>",)),
        Row("g.<b>", "<b>", 1, parents=("g",)),
    )
    runs = [_summary("r&2"), _summary("r1")]  # newest first
    counts = GridCounts.of(
        {
            ("r1", "g.<b>"): {TI.SUCCESS: 1},
            ("r&2", "g.<b>"): {TI.SUCCESS: 2, TI.UP_FOR_RESCHEDULE: 1, TI.FAILED: 1},
        }
    )
    grid = build_grid("d", RowWindow.at(1, 2), rows, runs, counts)
    group, line = grid.lines
    assert line.cells[0].state == TI.SUCCESS and line.cells[0].total == 1
    mixed = line.cells[1]
    assert mixed.state == TI.FAILED  # a failure first, then what waits, then success
    assert mixed.counts == ((TI.FAILED, 1), (TI.UP_FOR_RESCHEDULE, 1), (TI.SUCCESS, 2))
    assert group.cells[1].counts == mixed.counts and group.href(1) is None
    assert line.href(1) == "/dags/d/runs/r&amp;2/tasks/g.&lt;b&gt;"
    html = str(line.markup)
    assert "<b>" not in html and 'title="g.&lt;b&gt;: success"' in html
    assert 'title="g.&lt;b&gt;: failed 1, up_for_reschedule 1, success 2"' in html


def _summary(run_id: str) -> RunSummary:
    when = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    return RunSummary(run_id, DagRunState.RUNNING, "manual", None, when, when, None)


def test_a_group_cell_counts_its_tasks_outside_the_window(home: Home) -> None:
    _grouped(home)
    home.trigger("grouped", run_id="r1")
    for i in range(30):
        _set(home, "r1", f"g1.t{i:02d}", TI.FAILED if i == 29 else TI.SUCCESS)
    rows = grid_rows(structure_of(home.dag_model("grouped")))
    window = RowWindow.at(1, len(rows))
    shown = window.of(rows)
    keyed = counted_keys(shown)
    assert keyed["g1.t29"] == "g1" and keyed["g1.t15"] == "g1.t15"  # t15 is row 50
    assert keyed["g0.inner.deep"] == "g0.inner.deep" and "g2.t00" not in keyed
    with session_scope(home.url) as session:
        runs = recent_runs(session, "grouped", 25)
        cells = grid_cells(session, "grouped", ["r1"], keyed)
    assert cells[("r1", "g1")].counts == {TI.FAILED: 1, TI.SUCCESS: 13}
    grid = build_grid("grouped", window, shown, runs, cells)
    group = next(line for line in grid.lines if line.row.row_id == "g1")
    assert group.cells[0].counts == ((TI.FAILED, 1), (TI.SUCCESS, 29))
    g0 = grid.lines[0].cells[0]
    assert g0.total == 31 and grid.lines[0].href(0) is None  # a group links nowhere
    task = next(line for line in grid.lines if line.row.row_id == "g1.t15")
    assert task.href(0) == "/dags/grouped/runs/r1/tasks/g1.t15"


def test_the_grid_pages_its_rows_and_the_poll_keeps_the_page(signed_in: Client, home: Home) -> None:
    _grouped(home)
    home.trigger("grouped", run_id="r1")
    _set(home, "r1", "g1.t29", TI.FAILED)
    client = signed_in("viewer")
    first = client.get("/dags/grouped").text
    assert _rows_of(first)[0] == "g0" and len(_rows_of(first)) == GRID_ROWS
    assert "Rows 1\N{EN DASH}50 of 97" in first
    assert 'href="/dags/grouped?runs=25&amp;rows=2">Next rows' in first
    assert 'title="g1: failed 1, none 29"' in first  # the group's tasks on page 2 too
    second = client.get("/dags/grouped?rows=2").text
    # The page opens inside g1: its head comes again, marked, and counts as before.
    assert _rows_of(second)[:2] == ["g1", "g1.t16"] and _rows_of(second)[-1] == "fan"
    assert "(continued)" in second and 'title="g1: failed 1, none 29"' in second
    assert "Rows 51\N{EN DASH}97 of 97" in second
    assert 'data-refresh="/dags/grouped/grid?runs=25&amp;rows=2"' in second
    assert 'href="/dags/grouped/runs/r1/tasks/g1.t29" title="g1.t29: failed"' in second
    assert 'data-row-id="fan" data-parents=""' in second and "mapped-mark" in second
    partial = client.get("/dags/grouped/grid?runs=25&rows=2").text
    assert _rows_of(partial) == _rows_of(second) and "<html" not in partial
    assert _rows_of(client.get("/dags/grouped?rows=x").text) == _rows_of(first)


def _statements(client: TestClient, home: Home, path: str) -> int:
    client.get(path)  # the first view parses the structure
    with counting_statements(home.url) as counter:
        assert client.get(path).status_code == 200
    return len(counter.statements)


THOUSAND_DAG = """
from tradewind import DAG, TaskGroup, chain, task


@task
def step() -> None:
    pass


with DAG("thousand"):
    for g in range(10):
        with TaskGroup(f"g{g}"):
            chain(*[step.override(task_id=f"t{i:02d}")() for i in range(90)])
    for i in range(100):
        step.override(task_id=f"top{i:03d}")()
"""


def test_the_grid_costs_the_same_statements_for_3_tasks_and_1000(
    signed_in: Client, home: Home
) -> None:
    home.write_dag(THOUSAND_DAG, "thousand.py")
    home.sync()
    for dag_id in ("etl", "thousand"):
        for index in range(3):
            home.trigger(dag_id, run_id=f"r{index}")
    client = signed_in("viewer")
    for path in ("", "/grid"):
        small = _statements(client, home, f"/dags/etl{path}")
        assert _statements(client, home, f"/dags/thousand{path}") == small <= 5
        assert _statements(client, home, f"/dags/thousand{path}?rows=12") == small
