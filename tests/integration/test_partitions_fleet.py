"""Partitioned runs through real schedulers on PostgreSQL: hours rolling up into one daily run,
a week fanning out into seven, two schedulers never creating one key twice, and a key a mapper
refuses told in one line of one scheduler's log with nothing else affected."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from state.core.db import get_engine, session_scope
from state.core.models import DagRun, PartitionDagRun, PartitionEventQueue
from state.records.partitions import Contribution, KeyedEvent, claim_partition, record_contributions
from tests.integration.conftest import Fleet

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
PG_DATABASE_PREFIX = "tw_partitions_"
DAGS = Path(__file__).parent / "partition_dags"
DAY = [f"2026-06-14T{hour:02}:00:00" for hour in range(24)]


@pytest.fixture
def fleet(make_fleet: Callable[..., Fleet]) -> Fleet:
    made = make_fleet(DAGS, TRADEWIND_SCHEDULER_INTERVAL_SECONDS="0.2")
    made.start_worker("w1", concurrency=2)
    made.start_scheduler("scheduler1")
    made.start_scheduler("scheduler2")
    return made


def runs(fleet: Fleet, dag_id: str) -> list[tuple[str, str | None]]:
    with session_scope(fleet.url) as session:
        query = select(DagRun.run_id, DagRun.partition_key).where(DagRun.dag_id == dag_id)
        return [(run_id, key) for run_id, key in session.execute(query.order_by(DagRun.id))]


def produce(fleet: Fleet, dag_id: str, run_id: str, keys: list[str]) -> None:
    fleet.trigger(dag_id, run_id, conf={"keys": keys})
    assert fleet.wait_run(dag_id, run_id, timeout=120) == "success"


def test_hours_roll_up_into_one_day_and_a_week_fans_out_once_per_key(fleet: Fleet) -> None:
    produce(fleet, "emit_hourly", "first_half", DAY[:12])
    produce(fleet, "emit_weekly", "week", ["2026-06-10T00:00:00"])
    days = [f"2026-06-{day:02}" for day in range(8, 15)]
    fleet.wait_for(lambda: len(runs(fleet, "daily_inference")) == 7, 120, "seven daily runs")
    assert runs(fleet, "daily") == []  # half a day has arrived
    produce(fleet, "emit_hourly", "second_half", DAY[12:])
    fleet.wait_for(lambda: runs(fleet, "daily") != [], 120, "the daily rollup's run")
    (daily,) = runs(fleet, "daily")
    assert daily == ("asset_triggered__2026-06-14", "2026-06-14")
    assert fleet.wait_run("daily", daily[0], timeout=120) == "success"
    assert fleet.xcom("daily", daily[0], "report") == '"2026-06-14"'
    for run_id, _ in runs(fleet, "daily_inference"):
        assert fleet.wait_run("daily_inference", run_id, timeout=120) == "success"
    # The same partitions again, with both schedulers polling: recorded, never a second run.
    produce(fleet, "emit_hourly", "again", DAY)
    produce(fleet, "emit_weekly", "week_again", ["2026-06-09T00:00:00"])
    fleet.wait_for(lambda: _queue_empty(fleet), 120, "the keyed events mapped")
    assert runs(fleet, "daily") == [daily]
    keys = Counter(key for _, key in runs(fleet, "daily_inference"))
    assert sorted(keys) == days and set(keys.values()) == {1}
    both = fleet.log("scheduler1") + fleet.log("scheduler2")
    assert both.count("created run asset_triggered__2026-06-14 of daily:") == 1


def test_a_refused_key_is_one_line_and_the_other_keys_and_dags_go_on(fleet: Fleet) -> None:
    produce(fleet, "emit_regions", "regions", ["us", "mars"])
    fleet.wait_for(lambda: len(runs(fleet, "every_region")) == 1, 120, "every_region's run")
    fleet.wait_for(lambda: len(runs(fleet, "allowed_regions")) == 1, 120, "the allowed key's run")
    assert [key for _, key in runs(fleet, "allowed_regions")] == ["us"]
    fleet.wait_for(lambda: _queue_empty(fleet), 120, "the keyed events mapped")
    lines = [
        line
        for name in ("scheduler1", "scheduler2")
        for line in fleet.log(name).splitlines()
        if "'mars'" in line
    ]
    assert len(lines) == 1, lines
    assert "DAG allowed_regions: partition key 'mars' of asset 's3://sales/regions'" in lines[0]
    assert "AllowedKeyMapper: partition key 'mars' is not one of ['us', 'eu']" in lines[0]
    with session_scope(fleet.url) as session:
        rows = session.scalars(select(PartitionDagRun.partition_key).order_by("id")).all()
    assert sorted(rows) == ["all", "us"]


def _queue_empty(fleet: Fleet) -> bool:
    with session_scope(fleet.url) as session:
        return session.scalars(select(PartitionEventQueue)).first() is None


def test_two_schedulers_mapping_one_key_at_once_make_one_row_and_one_claim(
    make_fleet: Callable[..., Fleet],
) -> None:
    """Past the DAG row lock (as if two schedulers read the DAG at once): the unique key of
    ``partition_dag_run`` makes the second insert wait and do nothing, and the conditional
    claim gives the row one run only."""
    url = make_fleet(DAGS).url
    event = KeyedEvent(1, 1, "s3://stats/hourly", "s3://stats/hourly", DAY[0])
    mapped = [Contribution("2026-06-14", event)]
    first = Session(get_engine(url))
    record_contributions(first, "daily", mapped, [])  # holds the new key's row, uncommitted
    with ThreadPoolExecutor(1) as pool:
        second = pool.submit(_record_in_own_session, url, mapped)
        first.commit()
        second.result(timeout=60)
    first.close()
    with session_scope(url) as session:
        (row_id,) = session.scalars(select(PartitionDagRun.id)).all()
    with Session(get_engine(url)) as one, ThreadPoolExecutor(1) as pool:
        won = claim_partition(one, row_id, "run_a")
        other = pool.submit(_claim_in_own_session, url, row_id)  # waits on the row's lock
        one.commit()
        assert (won, other.result(timeout=60)) == (True, False)


def _record_in_own_session(url: str, mapped: list[Contribution]) -> None:
    with session_scope(url) as session:
        record_contributions(session, "daily", mapped, [])


def _claim_in_own_session(url: str, row_id: int) -> bool:
    with session_scope(url) as session:
        return claim_partition(session, row_id, "run_b")
