"""``/api/v2/monitor/health`` from the jobs' heartbeats, in Airflow 3.3's shape.

On SQLite only: the reading itself is tested on both stores (tests/state/test_jobs.py), and
through a real fleet on PostgreSQL (tests/integration/test_health_fleet.py).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api import create_app
from state.core import session_scope, utcnow
from state.records import JobKind, end_job, register_job
from tests.api.conftest import conforms
from tests.state.harness import Home, tradewind_home


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    with tradewind_home(tmp_path, monkeypatch) as made:
        yield made


def _job(home: Home, kind: JobKind, age_seconds: float) -> int:
    with session_scope(home.url) as session:
        return register_job(session, kind, now=utcnow() - dt.timedelta(seconds=age_seconds))


def test_with_no_job_the_scheduler_is_unhealthy_and_the_rest_unknown(api: TestClient) -> None:
    reply = api.get("/api/v2/monitor/health")
    assert reply.status_code == 200
    assert reply.json() == {
        "metadatabase": {"status": "healthy"},
        "scheduler": {"status": "unhealthy", "latest_scheduler_heartbeat": None},
        "triggerer": {"status": None, "latest_triggerer_heartbeat": None},
        "dag_processor": {"status": None, "latest_dag_processor_heartbeat": None},
    }
    conforms("HealthInfoResponse", reply.json())


def test_each_kind_reads_from_its_most_recent_job(api: TestClient, home: Home) -> None:
    _job(home, JobKind.SCHEDULER, 600)  # SIGKILLed long ago: running, silent
    _job(home, JobKind.SCHEDULER, 1)
    _job(home, JobKind.DAG_PROCESSOR, 120)
    with session_scope(home.url) as session:
        end_job(session, _job(home, JobKind.TRIGGERER, 5))
    health = api.get("/api/v2/monitor/health").json()
    assert health["scheduler"]["status"] == "healthy"
    beat = dt.datetime.fromisoformat(health["scheduler"]["latest_scheduler_heartbeat"])
    assert utcnow() - beat < dt.timedelta(seconds=30)
    assert health["dag_processor"]["status"] == "unhealthy"
    assert health["dag_processor"]["latest_dag_processor_heartbeat"] is not None
    assert health["triggerer"]["status"] == "unhealthy"  # it ended: none runs now
    conforms("HealthInfoResponse", health)


def test_a_store_that_does_not_answer_is_an_unhealthy_metadatabase(
    home: Home, tmp_path: Path
) -> None:
    away = home.settings.model_copy(
        update={"database_url": f"sqlite:///{tmp_path / 'no-such-folder' / 'gone.db'}"}
    )
    with TestClient(create_app(away)) as client:
        reply = client.get("/api/v2/monitor/health")
    assert reply.status_code == 503
    assert reply.json()["metadatabase"] == {"status": "unhealthy"}
