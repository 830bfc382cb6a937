"""The browses through FastAPI's test client (SQLite and PostgreSQL): what each lists and
links, its empty states, its one-line refusals of bad filters, its capped count, a statement
count that does not grow with the store, and the backfill form's rights and refusals."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from api.pages import browse
from tests.state.harness import Home, counting_statements
from tests.ui.browse_data import RUNS, add_many_dags, seed
from tests.ui.conftest import csrf_of

Client = Callable[[str], TestClient]


def _rows(html: str, table: str) -> int:
    body = html.split(f'class="list {table}"')[1].split("</tbody>")[0]
    return body.count("<tr data-")


def test_the_browses_list_and_link_what_the_store_holds(signed_in: Client, home: Home) -> None:
    seed(home)
    client = signed_in("viewer")
    runs = client.get("/dag_runs").text
    assert _rows(runs, "runs-browse") == len(RUNS)
    assert 'href="/dags/etl/runs/scheduled__2026-12-02"' in runs and "timetable" in runs
    tis = client.get("/task_instances?dag_id=etl&state=failed").text
    assert _rows(tis, "ti-browse") == 2
    assert 'href="/dags/etl/runs/scheduled__2026-12-02/tasks/load"' in tis
    assert 'value="etl|scheduled__2026-12-02|load|-1"' in tis
    assert 'id="ti-selection"' in tis and 'name="csrf_token"' in tis
    one_run = client.get("/task_instances?dag_id=etl&run_id=scheduled__2026-12-02").text
    assert _rows(one_run, "ti-browse") == 3
    assert 'href="/task_instances?dag_id=etl&amp;run_id=scheduled__2026-12-02"' in runs
    xcoms = client.get("/xcoms?dag_id=etl&task_id=extract").text
    assert _rows(xcoms, "xcoms") == 1 and "[1, 2, 3]" in xcoms
    assets = client.get("/assets").text
    assert 'href="/assets/' in assets and "s3://lake/orders.parquet" in assets
    asset_id = re.search(r'href="/assets/(\d+)"', assets).group(1)  # type: ignore[union-attr]
    asset = client.get(f"/assets/{asset_id}").text
    assert 'href="/dags/solo"' in asset and 'href="/dags/etl"' in asset
    assert 'href="/dags/etl/runs/scheduled__2026-12-01"' in asset


def test_empty_states_say_whether_nothing_exists_or_nothing_matches(
    signed_in: Client, home: Home
) -> None:
    client = signed_in("viewer")
    assert "No runs yet" in client.get("/dag_runs").text
    assert "No task instances yet" in client.get("/task_instances").text
    assert "No XComs yet" in client.get("/xcoms").text
    assert "No assets yet" in client.get("/assets").text
    assert "No backfills yet" in client.get("/backfills").text
    assert "No run matches these filters" in client.get("/dag_runs?state=failed").text
    assert "No DAG matches these filters" in client.get("/dags?search=zzz").text


def test_a_bad_filter_is_one_line_and_the_others_still_apply(signed_in: Client, home: Home) -> None:
    seed(home)
    client = signed_in("viewer")
    reply = client.get("/task_instances?state=failed&state=melted&start_date_gte=monday")
    assert reply.status_code == 200
    assert "state: &#39;melted&#39; is not one of" in reply.text
    assert "start_date_gte: &#39;monday&#39; is not a date" in reply.text
    assert _rows(reply.text, "ti-browse") == 3  # the failed ones, every DAG
    far = client.get(
        "/dag_runs?logical_date_lte=9999-12-31&start_date_gte=0001-01-01T00:00%2B14:00"
    )
    assert far.text.count("is out of range") == 1 and _rows(far.text, "runs-browse") == len(RUNS)
    sorted_badly = client.get("/dag_runs?order_by=colour").text
    assert "cannot sort by &#39;colour&#39;" in sorted_badly
    assert client.get("/dags/nope/runs").status_code == 404
    assert client.get("/assets/999999").status_code == 404
    assert client.get("/assets/99999999999").status_code == 404


def test_a_capped_count_says_more_and_pages_on(
    signed_in: Client, home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(home)
    monkeypatch.setattr(browse, "COUNT_CAP", 5)
    monkeypatch.setattr(browse, "PAGE_SIZE", 4)
    client = signed_in("viewer")
    first = client.get("/task_instances?dag_id=etl").text
    assert "5+ task instances" in first and "1\u20134 of 5+" in first
    assert 'href="/task_instances?dag_id=etl&amp;page=2"' in first
    third = client.get("/task_instances?dag_id=etl&page=3").text
    assert "9\u201312 of more than 5" in third and _rows(third, "ti-browse") == 4
    last = client.get("/task_instances?dag_id=etl&page=4").text
    assert _rows(last, "ti-browse") == 0 or "Next →</a>" not in last


def test_a_browse_costs_the_same_statements_on_a_larger_store(
    signed_in: Client, home: Home
) -> None:
    client = signed_in("viewer")
    paths = ["/dags?tags=demo&order_by=-last_run_start_date", "/dag_runs?state=failed",
             "/task_instances", "/dags/etl/runs"]  # fmt: skip

    def statements() -> list[int]:
        counts = []
        for path in paths:
            with counting_statements(home.url) as counter:
                assert client.get(path).status_code == 200
            counts.append(len(counter.statements))
        return counts

    seed(home)
    statements()  # the DAGs' structures, read once per version
    few = statements()
    add_many_dags(home, 200)
    for number in range(20):
        home.trigger("solo", run_id=f"more_{number}")
    assert statements() == few


def test_a_backfill_needs_the_user_role_and_a_scheduled_dag(signed_in: Client, home: Home) -> None:
    viewer = signed_in("viewer")
    assert "New backfill" not in viewer.get("/backfills").text
    form = {"dag_id": "etl", "from_date": "2026-11-01", "to_date": "2026-11-02"}
    token = csrf_of(signed_in("user").get("/dags").text)
    assert viewer.post("/backfills", data=form | {"csrf_token": token}).status_code == 403
    user = signed_in("user")
    token = csrf_of(user.get("/backfills").text)
    refused = user.post("/backfills", data=form | {"csrf_token": token})
    assert refused.status_code == 400 and "DAG etl has no time schedule" in refused.text
    bad_date = user.post("/backfills", data=form | {"csrf_token": token, "to_date": "soon"})
    assert bad_date.status_code == 400 and "to: &#39;soon&#39; is not a date" in bad_date.text
    missing = user.post("/backfills/7/pause", data={"csrf_token": token}, follow_redirects=True)
    assert "no backfill with id 7" in missing.text
