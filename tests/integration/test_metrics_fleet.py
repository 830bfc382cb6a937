"""``/metrics`` of a real fleet, scraped over HTTP from a real ``tradewind api-server``.

A scheduler, a Celery worker and the API server run as processes on PostgreSQL and Redis; one
run of a known DAG (a chain of three successes, one failure) ends, and the scrape says so by name
and value: tries started and finished by state, the run's duration observed as failed, the
pool's slots held while a try runs and free after, the claim's and the chain's waits, the
scheduler's loops.
"""

from __future__ import annotations

import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.conftest import Fleet, _answers, _free_port

DAGS = Path(__file__).parent / "metrics_dags"
TOKEN = "scrape-token-for-the-fleet-test"
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]

pytestmark = pytest.mark.integration


def scrape(base: str, token: str | None = TOKEN) -> tuple[int, Samples]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"{base}/metrics", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            text = reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, {}
    found = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    return 200, found


def value(base: str, name: str, **labels: str) -> float:
    return scrape(base)[1].get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture
def served(make_fleet: Callable[..., Fleet]) -> tuple[Fleet, str]:
    fleet = make_fleet(DAGS, TRADEWIND_METRICS_TOKEN=TOKEN, TRADEWIND_METRICS_FLUSH_SECONDS="0.3")
    tradewind = [sys.executable, "-m", "cli"]
    subprocess.run([*tradewind, "pools", "set", "metrics_pool", "3"], env=fleet.env, check=True)
    port = _free_port()
    fleet.start("api", [*tradewind, "api-server", "--host", "127.0.0.1", "--port", str(port)])
    base = f"http://127.0.0.1:{port}"
    fleet.wait_for(lambda: _answers(f"{base}/api/v2/monitor/health"), 60, "the API server")
    fleet.start_scheduler()
    fleet.start_worker(concurrency=2)
    return fleet, base


def test_a_known_run_scraped_by_name_and_value(served: tuple[Fleet, str], tmp_path: Path) -> None:
    fleet, base = served
    assert scrape(base, token=None)[0] == 401  # no anonymous scrape
    release = tmp_path / "release"
    fleet.trigger("metrics_known", "known", conf={"release": str(release)})

    # While ``hold`` runs: its slot is held in its pool, and it is a running task instance.
    fleet.wait_for(
        lambda: value(base, "tradewind_pool_running_slots", pool="metrics_pool") == 1,
        60,
        "hold's slot held in the scrape",
    )
    now = scrape(base)[1]
    assert now[("tradewind_pool_open_slots", (("pool", "metrics_pool"),))] == 2
    assert now[("tradewind_executor_running_tasks", ())] >= 1
    release.touch()
    assert fleet.wait_run("metrics_known", "known") == "failed"

    fleet.wait_for(
        lambda: value(base, "tradewind_dagrun_duration_seconds_count", state="failed") == 1,
        30,
        "the run's duration flushed by the process that ended it",
    )
    fleet.wait_for(
        lambda: value(base, "tradewind_ti_finish_total", state="success") == 3,
        30,
        "the supervisors' counts flushed",
    )
    found = scrape(base)[1]
    assert found[("tradewind_ti_start_total", ())] == 4
    assert found[("tradewind_ti_finish_total", (("state", "success"),))] == 3
    assert found[("tradewind_ti_finish_total", (("state", "failed"),))] == 1
    assert found[("tradewind_zombies_killed_total", ())] == 0
    assert found[("tradewind_dagrun_duration_seconds_sum", (("state", "failed"),))] > 0
    assert ("tradewind_dagrun_duration_seconds_count", (("state", "success"),)) not in found
    assert found[("tradewind_claim_latency_seconds_count", ())] == 4
    # first -> second -> hold: each end queued its downstream itself.
    assert found[("tradewind_chain_hop_seconds_count", ())] == 2
    assert found[("tradewind_scheduler_loop_duration_seconds_count", ())] > 0
    assert found[("tradewind_pool_open_slots", (("pool", "metrics_pool"),))] == 3
    assert found[("tradewind_pool_running_slots", (("pool", "metrics_pool"),))] == 0
    assert found[("tradewind_pool_open_slots", (("pool", "default_pool"),))] == 128
    assert found[("tradewind_executor_queued_tasks", ())] == 0
    assert found[("tradewind_dag_processing_import_errors", ())] == 0
    assert found[("tradewind_broker_dead_letters", ())] == 0
