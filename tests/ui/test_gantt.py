"""A run's Gantt chart (api/pages/gantt.py): a bar per task in the DAG's order, a mapped task
as one bar over its task instances, not-started tasks as empty rows, bounded statements."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from fastapi.testclient import TestClient

from state.core.db import session_scope
from state.core.enums import TaskInstanceState as TI
from state.core.models import TaskInstance
from tests.state.harness import Home, counting_statements

Client = Callable[[str], TestClient]
T0 = dt.datetime(2026, 12, 1, 8, 0, tzinfo=dt.UTC)


def _ran(home: Home, run_id: str, task_id: str, spans: list[tuple[int, int]], state: TI) -> None:
    """Give ``task_id`` one task instance per (start, end) second offset, all in ``state``."""
    with session_scope(home.url) as session:
        session.query(TaskInstance).filter_by(run_id=run_id, task_id=task_id).delete()
        mapped = len(spans) > 1
        session.add_all(
            TaskInstance(
                dag_id="etl", run_id=run_id, task_id=task_id, map_index=index if mapped else -1,
                state=state, start_date=T0 + dt.timedelta(seconds=start),
                end_date=T0 + dt.timedelta(seconds=end), try_number=1,
            )
            for index, (start, end) in enumerate(spans)
        )  # fmt: skip


def test_each_task_is_a_bar_on_one_scale_and_a_mapped_task_one_bar(
    signed_in: Client, home: Home
) -> None:
    home.trigger("etl", run_id="r1")
    _ran(home, "r1", "extract", [(0, 10)], TI.SUCCESS)
    _ran(home, "r1", "transform.double", [(10, 20), (12, 40), (15, 30)], TI.FAILED)
    client = signed_in("viewer")
    html = client.get("/dags/etl/runs/r1/gantt").text

    assert html.count('class="bar state-success"') == 1
    assert html.count('class="bar state-failed"') == 1  # three task instances, one bar
    assert "transform.double: failed, 3 task instances" in html
    assert "load" in html and "none, not started" in html
    assert html.index(">extract<") < html.index(">transform.double [ ]<")
    assert 'href="/dags/etl/runs/r1/tasks/extract"' in html
    assert 'href="/dags/etl/runs/r1/gantt"' in client.get("/dags/etl/runs/r1").text
    with counting_statements(home.url) as counter:
        client.get("/dags/etl/runs/r1/gantt")
    assert len(counter.statements) <= 5


def test_an_unknown_run_is_a_404_page(signed_in: Client, home: Home) -> None:
    reply = signed_in("viewer").get("/dags/etl/runs/nope/gantt")
    assert reply.status_code == 404 and "<h1>Not found</h1>" in reply.text
