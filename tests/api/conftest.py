"""Fixtures of the API tests: a migrated SQLite home with DAGs, one user per role, a client.

Each test runs on SQLite and on PostgreSQL. ``api`` is FastAPI's ``TestClient`` on
``create_app`` for the home's settings; ``token(role)``
signs in as that role's user through ``POST /auth/token`` (cached per test), and
``as_role(role)`` gives the headers that carry it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api import create_app
from state.core.db import session_scope
from state.records.users import Role, create_user
from tests.passwords import fixture_password_hash
from tests.state.harness import Home, tradewind_home

API_DAGS = """
from tradewind import DAG, dag, task


@task
def extract() -> list[int]:
    return [1, 2, 3]


@task(retries=2)
def load(rows: list[int]) -> int:
    return sum(rows)


@dag(dag_id="etl", tags=["demo"])
def etl(n=5):
    load(extract())


etl()

with DAG("solo", max_active_tasks=1):
    extract.override(task_id="only")()


@task
def double(x: int) -> int:
    return 2 * x


@dag(dag_id="fan")
def fan():
    double.expand(x=extract())


fan()
"""

PASSWORD = "correct horse battery staple"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def home(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Home]:
    """A home on SQLite, and one on this machine's PostgreSQL (a fresh database)."""
    env = (
        {}
        if request.param == "sqlite"
        else {"database_url": request.getfixturevalue("pg_migrated_url")}
    )
    with tradewind_home(tmp_path, monkeypatch, **env) as made:
        made.write_dag(API_DAGS)
        made.sync()
        with session_scope(made.url) as session:
            hashed = fixture_password_hash(PASSWORD)
            for role in Role:
                create_user(session, role.value, hashed, role)
        yield made


@pytest.fixture
def api(home: Home) -> Iterator[TestClient]:
    with TestClient(create_app(home.settings)) as client:
        yield client


@pytest.fixture
def as_role(api: TestClient) -> Callable[[str], dict[str, str]]:
    tokens: dict[str, str] = {}

    def headers(role: str) -> dict[str, str]:
        if role not in tokens:
            reply = api.post("/auth/token", json={"username": role, "password": PASSWORD})
            assert reply.status_code == 201, reply.text
            tokens[role] = reply.json()["access_token"]
        return {"Authorization": f"Bearer {tokens[role]}"}

    return headers


def conforms(model: str, document: object) -> object:
    """``document`` read by Airflow's own client model ``model`` (its required fields, types)."""
    import airflow_client.client as airflow

    parsed = getattr(airflow, model).from_dict(document)
    assert parsed is not None, document
    return parsed
