"""Assets, aliases and asset events through the API: an event made by hand queues its consumers."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from scheduler.asset_runs import create_asset_triggered_runs
from state.core.db import session_scope
from state.core.models import utcnow
from state.records.assets import EventSource, OutletEvent, record_events
from tests.api.conftest import conforms
from tests.state.harness import Home

Headers = Callable[[str], dict[str, str]]
V2 = "/api/v2"
START = dt.datetime(2024, 5, 1, 12, tzinfo=dt.UTC)
MINUTE = dt.timedelta(minutes=1)

ASSET_DAGS = """
import datetime as dt
from tradewind import DAG, Asset, AssetAlias, task

report = Asset(uri="s3://reports/daily", name="daily_report")
raw = Asset("s3://raw/events")

with DAG("produce", schedule="@daily", start_date=dt.datetime(2024, 1, 1)):
    task(lambda: None, task_id="work", outlets=[report, raw])()

with DAG("on_report", schedule=[report]):
    task(lambda: None, task_id="read")()

with DAG("on_alias", schedule=[AssetAlias("nightly")]):
    task(lambda: None, task_id="read")()
"""


@pytest.fixture
def assets_home(home: Home) -> Home:
    home.write_dag(ASSET_DAGS, "assets.py")
    home.sync()
    return home


def _ids(api: TestClient, headers: dict[str, str]) -> dict[str, int]:
    listed = api.get(f"{V2}/assets", headers=headers).json()
    return {a["uri"]: a["id"] for a in listed["assets"]}


def test_assets_listed_paged_filtered_and_read(
    assets_home: Home, api: TestClient, as_role: Headers
) -> None:
    viewer = as_role("viewer")
    listed = api.get(f"{V2}/assets", headers=viewer).json()
    conforms("AssetCollectionResponse", listed)
    assert listed["total_entries"] == 2
    by_uri = {a["uri"]: a for a in listed["assets"]}
    assert by_uri["s3://reports/daily"]["name"] == "daily_report"
    assert [d["dag_id"] for d in by_uri["s3://reports/daily"]["scheduled_dags"]] == ["on_report"]
    assert by_uri["s3://raw/events"]["scheduled_dags"] == []
    page = api.get(f"{V2}/assets?limit=1&offset=1&order_by=-uri", headers=viewer).json()
    assert [a["uri"] for a in page["assets"]] == ["s3://raw/events"]
    assert page["total_entries"] == 2
    only = api.get(f"{V2}/assets?uri_prefix_pattern=s3://raw", headers=viewer).json()
    assert [a["uri"] for a in only["assets"]] == ["s3://raw/events"]
    named = api.get(f"{V2}/assets?name_pattern=report", headers=viewer).json()
    assert [a["uri"] for a in named["assets"]] == ["s3://reports/daily"]
    scheduled = api.get(f"{V2}/assets?dag_ids=on_report", headers=viewer).json()
    assert [a["uri"] for a in scheduled["assets"]] == ["s3://reports/daily"]
    one = api.get(f"{V2}/assets/{by_uri['s3://raw/events']['id']}", headers=viewer)
    assert one.status_code == 200
    conforms("AssetResponse", one.json())
    assert api.get(f"{V2}/assets/999999", headers=viewer).status_code == 404
    bad = api.get(f"{V2}/assets?order_by=extra", headers=viewer)
    assert bad.status_code == 400 and "cannot order by 'extra'" in bad.json()["detail"]


def test_aliases_have_ids_and_name_the_assets_they_resolved_to(
    assets_home: Home, api: TestClient, as_role: Headers
) -> None:
    viewer = as_role("viewer")
    source = EventSource("produce", "r1", "work")
    with session_scope(assets_home.url) as session:
        record_events(session, source, [OutletEvent("s3://raw/events", alias="nightly")], utcnow())
    aliases = api.get(f"{V2}/assets/aliases", headers=viewer).json()
    conforms("AssetAliasCollectionResponse", aliases)
    assert [(a["name"], a["group"]) for a in aliases["asset_aliases"]] == [("nightly", "asset")]
    alias_id = aliases["asset_aliases"][0]["id"]
    one = api.get(f"{V2}/assets/aliases/{alias_id}", headers=viewer)
    assert one.json() == aliases["asset_aliases"][0]
    assert api.get(f"{V2}/assets/aliases/{alias_id + 1}", headers=viewer).status_code == 404
    none = api.get(f"{V2}/assets/aliases?name_prefix_pattern=day", headers=viewer).json()
    assert none == {"asset_aliases": [], "total_entries": 0}
    raw = api.get(f"{V2}/assets/{_ids(api, viewer)['s3://raw/events']}", headers=viewer).json()
    assert [a["name"] for a in raw["aliases"]] == ["nightly"]
    assert raw["last_asset_event"]["id"] is not None


def test_an_event_made_by_hand_triggers_the_consumer(
    assets_home: Home, api: TestClient, as_role: Headers
) -> None:
    report = _ids(api, as_role("viewer"))["s3://reports/daily"]
    body = {"asset_id": report, "extra": {"rows": 3}}
    refused = api.post(f"{V2}/assets/events", json=body, headers=as_role("viewer"))
    assert refused.status_code == 403
    created = api.post(f"{V2}/assets/events", json=body, headers=as_role("user"))
    assert created.status_code == 200, created.text
    conforms("AssetEventResponse", created.json())
    event = created.json()
    assert event["extra"] == {"rows": 3, "from_rest_api": True}
    assert (event["uri"], event["source_dag_id"], event["source_map_index"]) == (
        "s3://reports/daily",
        None,
        -1,
    )
    queued = api.get(f"{V2}/dags/on_report/assets/queuedEvents", headers=as_role("viewer")).json()
    conforms("QueuedEventCollectionResponse", queued)
    assert [(q["dag_id"], q["asset_id"]) for q in queued["queued_events"]] == [
        ("on_report", report)
    ]
    created_runs = create_asset_triggered_runs(assets_home.url)
    assert len(created_runs) == 1
    runs = api.get(f"{V2}/dags/on_report/dagRuns", headers=as_role("viewer")).json()
    assert [r["run_type"] for r in runs["dag_runs"]] == ["asset_triggered"]
    again = api.get(f"{V2}/dags/on_report/assets/queuedEvents", headers=as_role("viewer"))
    assert again.json() == {"queued_events": [], "total_entries": 0}
    unknown = api.get(f"{V2}/dags/nope/assets/queuedEvents", headers=as_role("viewer"))
    assert unknown.status_code == 404


def test_bad_event_bodies_are_refused_in_one_line(
    assets_home: Home, api: TestClient, as_role: Headers
) -> None:
    user = as_role("user")
    missing = api.post(f"{V2}/assets/events", json={"asset_id": 999999}, headers=user)
    assert missing.status_code == 404 and missing.json()["detail"] == "no asset with id 999999"
    report = _ids(api, user)["s3://reports/daily"]
    teams = {"asset_id": report, "access_control": {"consumer_teams": ["a"]}}
    refused = api.post(f"{V2}/assets/events", json=teams, headers=user)
    assert refused.status_code == 400 and "access_control" in refused.json()["detail"]
    for bad in ({"asset_id": "x"}, {"asset_id": report, "extra": []}, {"asset_id": report, "x": 1}):
        assert api.post(f"{V2}/assets/events", json=bad, headers=user).status_code == 422
    assert api.get(f"{V2}/assets/events", headers=user).json()["total_entries"] == 0


def test_events_listed_filtered_and_paged(
    assets_home: Home, api: TestClient, as_role: Headers
) -> None:
    viewer = as_role("viewer")
    with session_scope(assets_home.url) as session:
        for number, run_id in enumerate(("r1", "r2", "r3")):
            events = [OutletEvent("s3://reports/daily"), OutletEvent("s3://raw/events")]
            at = START + dt.timedelta(minutes=number)
            record_events(session, EventSource("produce", run_id, "work"), events, at)
    listed = api.get(f"{V2}/assets/events", headers=viewer).json()
    conforms("AssetEventCollectionResponse", listed)
    assert listed["total_entries"] == 6
    report = _ids(api, viewer)["s3://reports/daily"]
    mine = api.get(f"{V2}/assets/events?asset_id={report}&source_run_id=r2", headers=viewer)
    assert [(e["uri"], e["source_run_id"]) for e in mine.json()["asset_events"]] == [
        ("s3://reports/daily", "r2")
    ]
    page = api.get(f"{V2}/assets/events?limit=2&offset=1&order_by=-id", headers=viewer).json()
    ids = [e["id"] for e in listed["asset_events"]]
    assert [e["id"] for e in page["asset_events"]] == sorted(ids, reverse=True)[1:3]
    later = {"timestamp_gt": START.isoformat(), "timestamp_lte": (START + MINUTE).isoformat()}
    between = api.get(f"{V2}/assets/events", params=later, headers=viewer).json()
    assert {e["source_run_id"] for e in between["asset_events"]} == {"r2"}
    named = api.get(f"{V2}/assets/events?name_pattern=daily_rep", headers=viewer).json()
    assert named["total_entries"] == 3
