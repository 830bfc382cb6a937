"""Assets across processes: a producer run by a Celery worker records its asset event with its
try's end, and two schedulers on PostgreSQL create the consumer's run, once per update."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select

from state.core.db import session_scope
from state.core.models import DagRun
from tests.integration.conftest import Fleet

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]
PG_DATABASE_PREFIX = "tw_assets_"
DAGS = Path(__file__).parent / "asset_dags"


@pytest.fixture
def fleet(make_fleet: Callable[..., Fleet]) -> Fleet:
    return make_fleet(DAGS, TRADEWIND_SCHEDULER_INTERVAL_SECONDS="0.5")


def consumer_runs(fleet: Fleet) -> list[tuple[str, str, str]]:
    with session_scope(fleet.url) as session:
        rows = session.execute(
            select(DagRun.run_id, DagRun.run_type, DagRun.state)
            .where(DagRun.dag_id == "orders_consumer")
            .order_by(DagRun.id)
        )
        return [(run_id, run_type, str(state)) for run_id, run_type, state in rows]


def test_a_producers_success_creates_the_consumers_run_through_the_scheduler(
    fleet: Fleet,
) -> None:
    fleet.start_worker("w1", concurrency=2)
    fleet.start_scheduler("scheduler1")
    fleet.start_scheduler("scheduler2")
    for n in range(3):
        fleet.trigger("orders_producer", f"p{n}")
        assert fleet.wait_run("orders_producer", f"p{n}", timeout=120) == "success"
        fleet.wait_for(lambda n=n: len(consumer_runs(fleet)) > n, 120, f"consumer run {n + 1}")
        run_id = consumer_runs(fleet)[n][0]
        assert fleet.wait_run("orders_consumer", run_id, timeout=120) == "success"
        # The consumer read the event its producer's try recorded.
        assert fleet.xcom("orders_consumer", run_id, "report") == f'"p{n}"'
    runs = consumer_runs(fleet)
    assert [run_type for _, run_type, _ in runs] == ["asset_triggered"] * 3
