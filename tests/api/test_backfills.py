"""Backfills through the API: created as the CLI creates them, paused, resumed and cancelled."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from state.core.db import session_scope
from state.core.models import DagRun
from tests.api.conftest import conforms
from tests.state.harness import Home

Headers = Callable[[str], dict[str, str]]
V2 = "/api/v2"

DAILY = """
import datetime as dt
from tradewind import DAG, Param, task

with DAG("daily", schedule="@daily", start_date=dt.datetime(2024, 1, 1), max_active_runs=5,
         params={"rows": Param(1, type="integer")}):
    task(lambda: None, task_id="work")()
"""
JANUARY = {"dag_id": "daily", "from_date": "2024-01-01T00:00:00Z", "to_date": "2024-01-03T00:00Z"}


@pytest.fixture
def daily(home: Home) -> Home:
    home.write_dag(DAILY, "daily.py")
    home.sync()
    return home


def _runs(home: Home) -> list[tuple[int, str, str]]:
    with session_scope(home.url) as session:
        rows = session.execute(
            select(DagRun.id, DagRun.run_id, DagRun.state)
            .where(DagRun.dag_id == "daily")
            .order_by(DagRun.data_interval_start)
        )
        return [(pk, run_id, str(state)) for pk, run_id, state in rows]


def test_a_backfill_is_created_listed_and_read(
    daily: Home, api: TestClient, as_role: Headers
) -> None:
    dry = api.post(f"{V2}/backfills/dry_run", json=JANUARY, headers=as_role("user"))
    assert dry.status_code == 200, dry.text
    conforms("DryRunBackfillCollectionResponse", dry.json())
    assert dry.json()["total_entries"] == 3 and _runs(daily) == []
    created = api.post(f"{V2}/backfills", json=JANUARY, headers=as_role("user"))
    assert created.status_code == 200, created.text
    conforms("BackfillResponse", created.json())
    backfill = created.json()
    assert (backfill["dag_id"], backfill["is_paused"], backfill["completed_at"]) == (
        "daily",
        False,
        None,
    )
    assert [run_id for _, run_id, _ in _runs(daily)] == [
        f"backfill__2024-01-0{day}T00:00:00+00:00" for day in (2, 3, 4)
    ]
    assert api.post(f"{V2}/backfills/dry_run", json=JANUARY, headers=as_role("user")).json() == {
        "backfills": [],
        "total_entries": 0,
    }
    listed = api.get(f"{V2}/backfills?dag_id=daily", headers=as_role("viewer")).json()
    conforms("BackfillCollectionResponse", listed)
    assert [b["id"] for b in listed["backfills"]] == [backfill["id"]]
    assert api.get(f"{V2}/backfills?dag_id=etl", headers=as_role("viewer")).json() == {
        "backfills": [],
        "total_entries": 0,
    }
    one = api.get(f"{V2}/backfills/{backfill['id']}", headers=as_role("viewer"))
    assert one.json() == backfill
    assert api.get(f"{V2}/backfills/999999", headers=as_role("viewer")).status_code == 404


def test_backfills_are_paged(daily: Home, api: TestClient, as_role: Headers) -> None:
    user = as_role("user")
    for day in (1, 5, 9):
        body = {
            **JANUARY,
            "from_date": f"2024-02-0{day}T00:00Z",
            "to_date": f"2024-02-0{day}T00:00Z",
        }
        assert api.post(f"{V2}/backfills", json=body, headers=user).status_code == 200
    page = api.get(f"{V2}/backfills?limit=1&offset=1&order_by=-id", headers=user).json()
    every = api.get(f"{V2}/backfills", headers=user).json()
    assert page["total_entries"] == every["total_entries"] == 3
    assert [b["id"] for b in page["backfills"]] == [every["backfills"][1]["id"]]


def test_a_paused_backfill_starts_no_run_and_a_cancelled_one_fails_the_queued(
    daily: Home, api: TestClient, as_role: Headers
) -> None:
    user = as_role("user")
    backfill_id = api.post(f"{V2}/backfills", json=JANUARY, headers=user).json()["id"]
    paused = api.put(f"{V2}/backfills/{backfill_id}/pause", headers=user)
    assert paused.status_code == 200 and paused.json()["is_paused"] is True
    first = _runs(daily)[0][0]
    daily.schedule(first)
    assert daily.run_state(first) == "queued"  # paused: the scheduler leaves it
    assert (
        api.put(f"{V2}/backfills/{backfill_id}/unpause", headers=user).json()["is_paused"] is False
    )
    daily.schedule(first)
    assert daily.run_state(first) == "running"
    cancelled = api.put(f"{V2}/backfills/{backfill_id}/cancel", headers=user)
    assert cancelled.status_code == 200
    assert cancelled.json()["is_paused"] is True and cancelled.json()["completed_at"] is not None
    assert [state for _, _, state in _runs(daily)] == ["running", "failed", "failed"]
    for action in ("pause", "unpause", "cancel"):
        ended = api.put(f"{V2}/backfills/{backfill_id}/{action}", headers=user)
        assert ended.status_code == 409, action
        assert ended.json()["detail"] == f"backfill {backfill_id} has already completed"
    assert api.put(f"{V2}/backfills/999999/pause", headers=user).status_code == 404


def test_a_backfill_holds_its_runs_to_its_own_max_active_runs(
    daily: Home, api: TestClient, as_role: Headers
) -> None:
    body = {**JANUARY, "max_active_runs": 1}
    api.post(f"{V2}/backfills", json=body, headers=as_role("user"))
    for pk, _, _ in _runs(daily):
        daily.schedule(pk)
    assert [state for _, _, state in _runs(daily)] == ["running", "queued", "queued"]


def test_viewers_cannot_create_or_change_backfills(
    daily: Home, api: TestClient, as_role: Headers
) -> None:
    backfill_id = api.post(f"{V2}/backfills", json=JANUARY, headers=as_role("user")).json()["id"]
    viewer = as_role("viewer")
    assert api.post(f"{V2}/backfills", json=JANUARY, headers=viewer).status_code == 403
    assert api.post(f"{V2}/backfills/dry_run", json=JANUARY, headers=viewer).status_code == 403
    for action in ("pause", "unpause", "cancel"):
        assert api.put(f"{V2}/backfills/{backfill_id}/{action}", headers=viewer).status_code == 403
    assert api.get(f"{V2}/backfills").status_code == 401


#: Bodies Tradewind refuses: what is changed from JANUARY, the status, words of the detail.
BAD_BODIES: list[tuple[dict[str, object], int, str]] = [
    ({"dag_id": "nope"}, 404, "no DAG named 'nope'"),
    ({"dag_id": "etl"}, 400, "DAG etl has no time schedule"),
    ({"to_date": "2023-12-01T00:00Z"}, 400, "is before from date"),
    ({"run_backwards": True}, 400, "run_backwards is not supported"),
    ({"reprocess_behavior": "failed"}, 400, "reprocess_behavior 'failed' is not supported"),
    ({"run_on_latest_version": False}, 400, "run_on_latest_version false"),
    ({"dag_run_conf": {"rows": "many"}}, 400, "param 'rows': 'many' is not of type 'integer'"),
    ({"from_date": "2024-01-01T00:00"}, 422, "timezone"),
    ({"max_active_runs": 0}, 422, "greater than or equal to 1"),
    ({"colour": "red"}, 422, "Extra inputs are not permitted"),
]


def test_bad_backfill_bodies_are_refused_in_one_line(
    daily: Home, api: TestClient, as_role: Headers
) -> None:
    for change, status, detail in BAD_BODIES:
        for path in ("/backfills", "/backfills/dry_run"):
            reply = api.post(f"{V2}{path}", json={**JANUARY, **change}, headers=as_role("user"))
            assert reply.status_code == status, (change, reply.text)
            assert detail in str(reply.json()["detail"]), (change, reply.text)
    assert _runs(daily) == []
