"""A DAG's run options and a task's past options, as the API shows them (Airflow's fields)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from tests.api.conftest import conforms
from tests.state.harness import Home

V2 = "/api/v2"

LIFE = """
import datetime as dt
from tradewind import DAG, task

@task(wait_for_downstream=True, end_date=dt.datetime(2030, 1, 1))
def first():
    pass

with DAG("life", dagrun_timeout=dt.timedelta(minutes=5), end_date=dt.datetime(2031, 1, 1)):
    first()
"""


def test_the_run_options_in_a_dags_details_and_its_tasks(
    home: Home, api: TestClient, as_role: Callable[[str], dict[str, str]]
) -> None:
    home.write_dag(LIFE, name="life.py")
    home.sync()
    viewer = as_role("viewer")
    details = api.get(f"{V2}/dags/life/details", headers=viewer).json()
    conforms("DAGDetailsResponse", details)
    assert details["dag_run_timeout"] == "PT5M"
    assert details["end_date"].startswith("2031-01-01T00:00:00")
    first = api.get(f"{V2}/dags/life/tasks/first", headers=viewer).json()
    conforms("TaskResponse", first)
    assert first["depends_on_past"] and first["wait_for_downstream"]
    assert first["end_date"].startswith("2030-01-01T00:00:00")
