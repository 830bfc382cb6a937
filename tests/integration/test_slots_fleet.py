"""Free slots by weight through the real fleet (scheduler and Celery worker on PostgreSQL +
Redis): tries of two DAGs queued at once in a pool of one slot start heaviest first."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from state.core.db import session_scope
from state.engine.pools import set_pool
from tests.integration.conftest import Fleet

pytestmark = pytest.mark.integration
DAGS = Path(__file__).parent / "slot_dags"


def test_a_one_slot_pool_starts_the_waiting_tries_by_weight_across_dags(
    make_fleet: Callable[..., Fleet],
) -> None:
    fleet = make_fleet(DAGS)
    with session_scope(fleet.url) as session:
        set_pool(session, "solo", 1)
    # Both runs exist before anything runs: every try waits for the slot together.
    fleet.trigger("weighed", "r1")
    fleet.trigger("weighed_other", "r1")
    fleet.start_worker(concurrency=4)
    fleet.start_scheduler()

    assert fleet.wait_run("weighed", "r1", timeout=90) == "success"
    assert fleet.wait_run("weighed_other", "r1", timeout=30) == "success"

    tries = [
        *fleet.task_instances("weighed", "r1").values(),
        *fleet.task_instances("weighed_other", "r1").values(),
    ]
    started = [ti.task_id for ti in sorted(tries, key=lambda ti: ti.start_date)]
    assert started == ["w10", "w8", "w7", "w5", "w3", "w1"]
    # Never two at once in the one slot.
    spans = sorted((ti.start_date, ti.end_date) for ti in tries)
    assert all(end <= next_start for (_, end), (next_start, _) in itertools.pairwise(spans))
