"""A database outage shorter than the zombie threshold costs no try (DESIGN.md §7 "Outages").

The test's own PostgreSQL is stopped with ``pg_ctl stop -m immediate`` (every backend killed, as
in a crash) while two tries sleep in their task processes, and started again seconds later. The
tasks have ``retries=0``: a try given up would fail the run.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import Fleet
from tests.integration.test_outages_servers import (
    PostgresServer,
    bodies_run,
    outage_fleet,
    own_postgres,
    wait_run_through_outage,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
__all__ = ["own_postgres"]  # the fixture, imported for pytest


@pytest.fixture
def fleet(tmp_path: Path, own_postgres: PostgresServer, redis_url: str) -> Iterator[Fleet]:
    made = outage_fleet(tmp_path, own_postgres.url, redis_url, sleep_seconds=2)
    made.env["TRADEWIND_ZOMBIE_THRESHOLD_SECONDS"] = "20"
    yield made
    made.stop()


def _wait_both_running(fleet: Fleet) -> None:
    record = Path(fleet.env["OUTAGE_RECORD"])
    fleet.wait_for(lambda: len(bodies_run(record)) == 2, 60, "both sleepers to start")


def test_a_postgres_restart_mid_run_costs_no_try(fleet: Fleet, own_postgres: PostgresServer) -> None:
    fleet.start_worker("w1", concurrency=2)
    fleet.start_scheduler()
    fleet.trigger("outage", "r1")
    _wait_both_running(fleet)

    own_postgres.stop()
    time.sleep(5)
    own_postgres.start()

    assert wait_run_through_outage(fleet, "outage", "r1") == "success"
    bodies = sorted(bodies_run(Path(fleet.env["OUTAGE_RECORD"])))
    assert bodies == ["r1 after 1", "r1 left 1", "r1 right 1"]  # each body once, first try
    assert all(process.poll() is None for process, _ in fleet.processes)
