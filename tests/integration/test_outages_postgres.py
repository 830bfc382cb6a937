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

from state.core.db import get_engine
from tests.integration.conftest import Fleet
from tests.integration.test_outages_servers import (
    PostgresServer,
    bodies_run,
    outage_fleet,
    own_postgres,
    try_log_times,
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


def test_a_postgres_restart_mid_run_costs_no_try(
    fleet: Fleet, own_postgres: PostgresServer
) -> None:
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


@pytest.fixture
def short_fleet(
    tmp_path: Path, own_postgres: PostgresServer, redis_url: str, retries: int
) -> Iterator[Fleet]:
    """Zombie after 6 s: a try waits 5 s for the store (a kill grace of 1 s before that)."""
    made = outage_fleet(tmp_path, own_postgres.url, redis_url, sleep_seconds=8, retries=retries)
    made.env["TRADEWIND_ZOMBIE_THRESHOLD_SECONDS"] = "6"
    yield made
    made.stop()


@pytest.mark.parametrize("retries", [1, 0])
def test_an_outage_past_the_zombie_threshold_retries_or_fails_the_tries(
    short_fleet: Fleet, own_postgres: PostgresServer, retries: int
) -> None:
    fleet = short_fleet
    fleet.start_worker("w1", concurrency=2)
    fleet.start_scheduler()
    fleet.trigger("outage", "r1")
    _wait_both_running(fleet)

    own_postgres.stop()
    time.sleep(10)
    own_postgres.start()

    expected = "success" if retries else "failed"
    assert wait_run_through_outage(fleet, "outage", "r1") == expected
    bodies = sorted(bodies_run(Path(fleet.env["OUTAGE_RECORD"])))
    tis = fleet.task_instances("outage", "r1")
    if retries:
        assert bodies == ["r1 after 1", "r1 left 1", "r1 left 2", "r1 right 1", "r1 right 2"]
        assert (tis["left"].try_number, tis["right"].try_number) == (2, 2)
        for task_id in ("left", "right"):
            # The first try's task was gone before the second try started: never two at once.
            assert (
                try_log_times(fleet, "r1", task_id, 1)[1]
                < try_log_times(fleet, "r1", task_id, 2)[0]
            )
    else:
        assert bodies == ["r1 left 1", "r1 right 1"]
        assert {tis["left"].state, tis["right"].state} == {"failed"}
        assert tis["left"].error is not None and tis["left"].error.startswith("zombie")
    log = fleet.log("w1")
    # Each supervisor gave its try up and wrote nothing more: no late write reached the store.
    assert log.count("the zombie rule takes the try") == 2
    for task_id in ("left", "right"):
        first_try = (fleet.home / f"logs/outage/r1/{task_id}/-1/1.log").read_text()
        assert "nothing recorded" in first_try and "ended success" not in first_try
    assert all(process.poll() is None for process, _ in fleet.processes)


def test_a_message_delivered_while_the_store_is_away_costs_no_try(
    tmp_path: Path, own_postgres: PostgresServer, redis_url: str
) -> None:
    """Its claim waits for the store; past the bound (5 s here) the message goes back on the
    queue, is delivered again, and waits again: no try is used, none is lost."""
    fleet = outage_fleet(tmp_path, own_postgres.url, redis_url, sleep_seconds=1)
    fleet.env["TRADEWIND_ZOMBIE_THRESHOLD_SECONDS"] = "6"
    try:
        fleet.start_scheduler()
        fleet.trigger("outage", "r1")
        tis = lambda: fleet.task_instances("outage", "r1")  # noqa: E731
        fleet.wait_for(
            lambda: tis()["left"].state == tis()["right"].state == "queued",
            30,
            "the sleepers to be queued, with no worker to take them",
        )
        get_engine(own_postgres.url).dispose()
        own_postgres.stop()
        fleet.start_worker("w1", concurrency=2)
        fleet.wait_for(
            lambda: "giving the message back" in fleet.log("w1"), 60, "a claim to give up"
        )
        own_postgres.start()

        assert wait_run_through_outage(fleet, "outage", "r1") == "success"
        bodies = sorted(bodies_run(Path(fleet.env["OUTAGE_RECORD"])))
        assert bodies == ["r1 after 1", "r1 left 1", "r1 right 1"]
        assert "claiming outage/r1/left try 1: the SQL store is unavailable" in fleet.log("w1")
        assert all(process.poll() is None for process, _ in fleet.processes)
    finally:
        fleet.stop()
