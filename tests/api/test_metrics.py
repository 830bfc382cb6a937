"""``GET /metrics``: who may scrape, and what a scrape says of the store and the reports.

The figures after a real run, over HTTP from a real server, are tests/integration's
(test_metrics_fleet.py).
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from api import create_app
from state.core.db import session_scope
from state.core.metrics import Buffer, labels_key, write_buffer
from tests.api.conftest import PASSWORD
from tests.state.harness import Home

SCRAPE_TOKEN = "scrape-token-0123456789"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition, by name and labels."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_no_anonymous_scrape(api: TestClient) -> None:
    reply = api.get("/metrics")
    assert reply.status_code == 401
    assert api.get("/metrics", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_any_user_who_reads_may_scrape(
    api: TestClient, as_role: Callable[[str], dict[str, str]]
) -> None:
    reply = api.get("/metrics", headers=as_role("viewer"))
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("text/plain; version=0.0.4")
    found = samples(reply.text)
    assert found[("tradewind_ti_start_total", ())] == 0
    assert found[("tradewind_pool_open_slots", (("pool", "default_pool"),))] == 128
    assert found[("tradewind_executor_queued_tasks", ())] == 0
    assert found[("tradewind_dag_processing_import_errors", ())] == 0
    assert found[("tradewind_broker_dead_letters", ())] == 0


def test_the_scrape_token_lets_prometheus_in(home: Home) -> None:
    settings = home.settings.model_copy(update={"metrics_token": SCRAPE_TOKEN})
    with TestClient(create_app(settings)) as client:
        assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
        reply = client.get("/metrics", headers={"Authorization": f"Bearer {SCRAPE_TOKEN}"})
    assert reply.status_code == 200, reply.text


def test_metrics_turned_off_are_not_found(home: Home) -> None:
    settings = home.settings.model_copy(update={"metrics_enabled": False})
    with TestClient(create_app(settings)) as client:
        assert client.get("/metrics").status_code == 404


def test_reports_become_counters_and_cumulative_histograms(
    home: Home, api: TestClient, as_role: Callable[[str], dict[str, str]]
) -> None:
    buffer = Buffer()
    buffer.count(labels_key("ti_finish", {"state": "failed"}), 1)
    run = labels_key("dagrun_duration_seconds", {"state": "success"})
    for seconds in (3.0, 4.0, 70.0):
        buffer.observe(run, seconds)
    with session_scope(home.url) as session:
        write_buffer(session, buffer, "host:1")

    found = samples(api.get("/metrics", headers=as_role("viewer")).text)
    success = ("state", "success")
    assert found[("tradewind_ti_finish_total", (("state", "failed"),))] == 1
    assert found[("tradewind_dagrun_duration_seconds_bucket", (("le", "5.0"), success))] == 2
    assert found[("tradewind_dagrun_duration_seconds_bucket", (("le", "60.0"), success))] == 2
    assert found[("tradewind_dagrun_duration_seconds_bucket", (("le", "+Inf"), success))] == 3
    assert found[("tradewind_dagrun_duration_seconds_count", (success,))] == 3
    assert found[("tradewind_dagrun_duration_seconds_sum", (success,))] == 77


def test_a_broker_that_does_not_answer_leaves_its_series_out(home: Home) -> None:
    settings = home.settings.model_copy(update={"broker_url": "redis://127.0.0.1:1/0"})
    with TestClient(create_app(settings)) as client:
        token = client.post("/auth/token", json={"username": "viewer", "password": PASSWORD})
        headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
        reply = client.get("/metrics", headers=headers)
    assert reply.status_code == 200, reply.text
    found = samples(reply.text)
    assert ("tradewind_broker_dead_letters", ()) not in found
    assert found[("tradewind_executor_running_tasks", ())] == 0
