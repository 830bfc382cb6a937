"""What the API says of a DAG scheduled by a timetable object: Airflow's timetable fields."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from tests.api.conftest import conforms
from tests.api.test_run_pages import sign_in
from tests.state.harness import Home

DAGS = """
import datetime as dt
from tradewind import DAG, EventsTimetable, MultipleCronTriggerTimetable, task

with DAG("twice", schedule=MultipleCronTriggerTimetable("0 6 * * *", "0 18 * * *",
         timezone="Europe/Amsterdam"), start_date=dt.datetime(2024, 1, 1)):
    task(lambda: None, task_id="work")()

with DAG("matches", schedule=EventsTimetable([dt.datetime(2024, 6, 14, 21)], description="Euro")):
    task(lambda: None, task_id="work")()
"""


def test_a_dag_shows_its_timetables_summary(
    home: Home, api: TestClient, as_role: Callable[[str], dict[str, str]]
) -> None:
    home.write_dag(DAGS, "timetables.py")
    assert home.sync().import_errors == {}
    shown = {}
    for dag_id in ("twice", "matches"):
        reply = api.get(f"/api/v2/dags/{dag_id}", headers=as_role("viewer"))
        assert reply.status_code == 200, reply.text
        conforms("DAGResponse", reply.json())
        body = reply.json()
        shown[dag_id] = (body["timetable_summary"], body["timetable_periodic"])
    assert shown == {"twice": ("0 6 * * *, 0 18 * * *", True), "matches": ("Euro", True)}


def test_the_pages_show_a_timetables_summary(home: Home, api: TestClient) -> None:
    home.write_dag(DAGS, "timetables.py")
    home.sync()
    sign_in(api, "viewer")
    assert "<code>0 6 * * *, 0 18 * * *</code>" in api.get("/dags").text
    assert "<code>Euro</code>" in api.get("/dags/matches").text
