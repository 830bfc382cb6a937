"""A broker outage shorter than the zombie threshold costs no try (DESIGN.md §7 "Outages").

Redis (AOF on) is SIGKILLed while two tries sleep in their task processes and started again on
its AOF a few seconds later. The tasks have ``retries=0``: a try given up would fail the run.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import Fleet
from tests.integration.test_outages_servers import (
    RedisServer,
    bodies_run,
    outage_fleet,
    own_redis,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
PG_DATABASE_PREFIX = "tw_outage_redis_"
__all__ = ["own_redis"]  # the fixture, imported for pytest


@pytest.fixture
def fleet(tmp_path: Path, pg_url: str, own_redis: RedisServer) -> Iterator[Fleet]:
    made = outage_fleet(tmp_path, pg_url, own_redis.url, sleep_seconds=8)
    made.env["TRADEWIND_ZOMBIE_THRESHOLD_SECONDS"] = "20"
    yield made
    made.stop()


def _wait_both_running(fleet: Fleet) -> None:
    record = Path(fleet.env["OUTAGE_RECORD"])
    fleet.wait_for(lambda: len(bodies_run(record)) == 2, 60, "both sleepers to start")


def test_a_redis_restart_mid_run_costs_no_try(fleet: Fleet, own_redis: RedisServer) -> None:
    fleet.start_worker("w1", concurrency=2)
    fleet.start_scheduler()
    fleet.trigger("outage", "r1")
    _wait_both_running(fleet)
    time.sleep(1.5)  # the AOF (fsync every second) holds the deliveries by now

    own_redis.kill()
    time.sleep(3)
    own_redis.start()

    assert fleet.wait_run("outage", "r1", timeout=90) == "success"
    bodies = sorted(bodies_run(Path(fleet.env["OUTAGE_RECORD"])))
    assert bodies == ["r1 after 1", "r1 left 1", "r1 right 1"]  # each body once, first try
    assert {ti.try_number for ti in fleet.task_instances("outage", "r1").values()} == {1}
    assert all(process.poll() is None for process, _ in fleet.processes)


def test_a_redis_outage_past_the_zombie_threshold_costs_no_try_either(
    tmp_path: Path, pg_url: str, own_redis: RedisServer
) -> None:
    """Heartbeats and ends go to SQL: a try ending while Redis is away is recorded, and its
    downstream message is sent when Redis is back (the pool process waits to publish it)."""
    fleet = outage_fleet(tmp_path, pg_url, own_redis.url, sleep_seconds=3)
    fleet.env["TRADEWIND_ZOMBIE_THRESHOLD_SECONDS"] = "6"
    try:
        fleet.start_worker("w1", concurrency=2)
        fleet.start_scheduler()
        fleet.trigger("outage", "r1")
        _wait_both_running(fleet)
        time.sleep(1.5)  # the AOF (fsync every second) holds the deliveries by now

        own_redis.kill()
        tis = lambda: fleet.task_instances("outage", "r1")  # noqa: E731
        fleet.wait_for(
            lambda: tis()["left"].state == tis()["right"].state == "success",
            30,
            "both sleepers to end while Redis is away",
        )
        time.sleep(8)  # 9.5 s in all since the kill: past the zombie threshold
        own_redis.start()

        assert fleet.wait_run("outage", "r1", timeout=60) == "success"
        bodies = sorted(bodies_run(Path(fleet.env["OUTAGE_RECORD"])))
        assert bodies == ["r1 after 1", "r1 left 1", "r1 right 1"]
        assert all(process.poll() is None for process, _ in fleet.processes)
    finally:
        fleet.stop()
