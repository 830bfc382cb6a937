"""``/dags/{dag_id}``: the grid (one aggregate, groups, mapped cells), graph, code, details,
and the trigger form (params to inputs, errors by field, roles, CSRF)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from api.pages.grid_model import GRID_ROWS
from state.core.db import session_scope
from state.core.enums import TaskInstanceState
from state.core.models import TaskInstance
from state.views.overview import recent_runs
from tests.state.harness import Home, counting_statements
from tests.ui.conftest import csrf_of

Client = Callable[[str], TestClient]
TI = TaskInstanceState


def _set_states(home: Home, run_id: str, task_id: str, states: list[TI]) -> None:
    """Give ``task_id`` of ``run_id`` one task instance per state (map indexes 0, 1, ...)."""
    with session_scope(home.url) as session:
        session.query(TaskInstance).filter_by(run_id=run_id, task_id=task_id).delete()
        session.add_all(
            TaskInstance(dag_id="etl", run_id=run_id, task_id=task_id, map_index=i, state=s)
            for i, s in enumerate(states)
        )


def test_the_grid_shows_runs_tasks_groups_and_a_mapped_task_as_one_cell(
    signed_in: Client, home: Home
) -> None:
    home.trigger("etl", run_id="r1")
    _set_states(home, "r1", "extract", [TI.SUCCESS])
    _set_states(home, "r1", "transform.double", [TI.SUCCESS] * 3 + [TI.FAILED] * 2)
    html = signed_in("viewer").get("/dags/etl").text
    assert 'data-row-id="transform" data-parents=""' in html
    assert 'data-row-id="transform.double" data-parents="transform"' in html
    assert 'href="/dags/etl/runs/r1/tasks/extract" title="extract: success"' in html
    assert html.count('href="/dags/etl/runs/r1/tasks/transform.double"') == 1
    assert 'title="transform.double: failed 2, success 3"' in html
    assert 'data-refresh="/dags/etl/grid?runs=25"' in html


def test_the_grid_partial_follows_the_store(signed_in: Client, home: Home) -> None:
    home.trigger("etl", run_id="r1")
    client = signed_in("viewer")
    assert 'title="extract: none"' in client.get("/dags/etl/grid").text
    _set_states(home, "r1", "extract", [TI.SUCCESS])
    partial = client.get("/dags/etl/grid").text
    assert 'title="extract: success"' in partial and "<html" not in partial


def _grid_statements(client: TestClient, home: Home, path: str) -> int:
    with counting_statements(home.url) as counter:
        assert client.get(path).status_code == 200
    return len(counter.statements)


def test_the_grid_of_25_runs_of_200_task_instances_costs_what_3_tasks_cost(
    signed_in: Client, home: Home
) -> None:
    client = signed_in("viewer")
    home.trigger("etl", run_id="small")
    client.get("/dags/etl")
    small = _grid_statements(client, home, "/dags/etl")
    for index in range(25):
        run_id = f"big{index:02}"
        home.trigger("etl", run_id=run_id)
        _set_states(home, run_id, "transform.double", [TI.SUCCESS] * 200)
    # The user, the DAG, its runs, the cells' aggregate and the earlier tries (try markers).
    assert _grid_statements(client, home, "/dags/etl") == small <= 6
    assert _grid_statements(client, home, "/dags/etl/grid") <= 5
    with session_scope(home.url) as session:
        assert len(recent_runs(session, "etl", 25)) == 25


def test_the_graph_is_svg_with_groups_and_edges(signed_in: Client, home: Home) -> None:
    html = signed_in("viewer").get("/dags/etl?tab=graph").text
    assert "<svg" in html and 'data-group="transform"' in html
    assert html.count('class="edge"') == 2
    assert 'data-task-id="transform.double"' in html
    closed = signed_in("viewer").get("/dags/etl?tab=graph&open=").text
    assert 'class="node closed-group" data-group="transform"' in closed
    assert 'data-task-id="transform.double"' not in closed
    assert 'href="?tab=graph&amp;open=transform"' in closed  # a click opens it again


def test_code_and_details(signed_in: Client, home: Home) -> None:
    client = signed_in("viewer")
    code = client.get("/dags/etl?tab=code").text
    assert "@dag(" in code and "def etl():" in code
    details = client.get("/dags/etl?tab=details").text
    assert "Loads <strong>rows</strong> every night." in details
    assert "Extract, transform, load" in details


def test_an_unknown_dag_is_a_404_page(signed_in: Client) -> None:
    reply = signed_in("viewer").get("/dags/nope")
    assert reply.status_code == 404 and "<h1>Not found</h1>" in reply.text


def test_the_trigger_form_is_built_from_the_params(signed_in: Client) -> None:
    html = signed_in("user").get("/dags/etl/trigger").text
    assert '<select id="field-mode" name="param:mode"' in html
    assert "<option selected>full</option><option>delta</option>" in html
    assert 'type="number" name="param:rows" value="3" step="1"' in html
    assert 'type="checkbox" name="param:dry_run" value="true"' in html
    assert 'type="text" name="param:day" value="2026-12-01"' in html
    assert "The day to load" in html and "(at least 1)" in html


def _trigger(client: TestClient, **fields: str) -> tuple[int, str]:
    token = csrf_of(client.get("/dags/etl/trigger").text)
    form = {
        "csrf_token": token,
        "param:day": "2026-12-02",
        "param:rows": "4",
        "param:mode": "delta",
        "param:dry_run": "true",
        **fields,
    }
    reply = client.post("/dags/etl/trigger", data=form)
    return reply.status_code, reply.text


def _runs(home: Home) -> list[str]:
    with session_scope(home.url) as session:
        return [run.run_id for run in recent_runs(session, "etl", 100)]


def test_triggering_from_the_form_creates_a_run_with_the_conf(
    signed_in: Client, home: Home
) -> None:
    code, html = _trigger(signed_in("user"), run_id="from_form")
    assert code == 200 and "Triggered etl: run from_form is queued." in html
    run = home.run(_pk(home, "from_form"))
    assert run.conf == {"day": "2026-12-02", "rows": 4, "mode": "delta", "dry_run": True}


def _pk(home: Home, run_id: str) -> int:
    from state.core.models import DagRun

    with session_scope(home.url) as session:
        return session.query(DagRun).filter_by(run_id=run_id).one().id


def test_a_bad_conf_shows_errors_by_field_and_creates_nothing(
    signed_in: Client, home: Home
) -> None:
    code, html = _trigger(signed_in("user"), **{"param:rows": "0", "param:mode": "weekly"})
    assert code == 400
    assert (
        'id="field-rows-error" role="alert">param &#39;rows&#39;: 0 is less than the minimum of 1'
        in html
    )
    assert "field-mode-error" in html and "is not one of" in html
    assert 'name="param:rows" value="0"' in html  # what was typed is kept
    code, html = _trigger(signed_in("user"), **{"param:rows": "many"})
    assert code == 400 and "&#39;many&#39; is not a number" in html
    assert _runs(home) == []


def test_triggering_needs_the_user_role_and_the_csrf_token(signed_in: Client, home: Home) -> None:
    viewer = signed_in("viewer")
    assert viewer.get("/dags/etl/trigger").status_code == 403
    assert "Trigger</a>" not in viewer.get("/dags/etl").text
    token = csrf_of(viewer.get("/dags").text)
    assert viewer.post("/dags/etl/trigger", data={"csrf_token": token}).status_code == 403
    user = signed_in("user")
    user.get("/dags/etl/trigger")
    assert user.post("/dags/etl/trigger", data={"param:rows": "2"}).status_code == 403
    assert _runs(home) == []


WIDE_DAG = """
from tradewind import DAG, task


@task
def step():
    pass


with DAG("wide"):
    for index in range(200):
        step.override(task_id=f"t{index:03}")()
"""


def test_a_grid_of_25_runs_of_200_tasks_costs_what_one_run_of_3_tasks_costs(
    signed_in: Client, home: Home
) -> None:
    home.write_dag(WIDE_DAG, "wide.py")
    home.sync()
    client = signed_in("viewer")
    home.trigger("etl", run_id="one")
    client.get("/dags/etl")
    three_tasks = _grid_statements(client, home, "/dags/etl")
    for index in range(25):
        home.trigger("wide", run_id=f"w{index:02}")
    client.get("/dags/wide")
    wide = _grid_statements(client, home, "/dags/wide")
    assert wide == three_tasks
    html = client.get("/dags/wide").text  # a window of the rows, the others a link away
    assert html.count('href="/dags/wide/runs/w24/tasks/') == GRID_ROWS
    assert f"Rows 1\N{EN DASH}{GRID_ROWS} of 200" in html


def test_a_run_id_that_could_leave_its_log_folder_is_a_form_error(
    signed_in: Client, home: Home
) -> None:
    code, html = _trigger(signed_in("user"), run_id="../other")
    assert code == 400
    assert "run id &#39;../other&#39; may hold only" in html
    assert _runs(home) == []


def test_run_bars_are_as_tall_as_the_runs_were_long(signed_in: Client, home: Home) -> None:
    import datetime as dt

    from state.core.models import DagRun

    start = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    for run_id, seconds in (("short", 10), ("long", 100), ("waiting", None)):
        home.trigger("etl", run_id=run_id)
        if seconds is not None:
            with session_scope(home.url) as session:
                session.query(DagRun).filter_by(run_id=run_id).update(
                    {"start_date": start, "end_date": start + dt.timedelta(seconds=seconds)}
                )
    html = signed_in("viewer").get("/dags/etl/grid").text
    assert 'style="height: 34px"\n        title="long' in html
    assert 'style="height: 9px"\n        title="short' in html  # 6 + 28 * 10%
    assert "· not started" in html


def test_the_calendar_counts_runs_by_utc_day(signed_in: Client, home: Home) -> None:
    import datetime as dt

    from state.core.models import DagRun, utcnow

    late = utcnow().replace(hour=23, minute=30) - dt.timedelta(days=3)  # near midnight, UTC
    for n, state in enumerate(["success", "success", "failed"]):
        home.trigger("etl", run_id=f"day{n}")
        with session_scope(home.url) as session:
            session.query(DagRun).filter_by(run_id=f"day{n}").update(
                {"logical_date": late, "state": state}
            )
    html = signed_in("viewer").get("/dags/etl?tab=calendar").text
    assert f'title="{late:%a %Y-%m-%d}: 1 failed, 2 success"' in html
    assert 'class="day state-failed level-4"' in html
