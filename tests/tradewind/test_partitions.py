"""Partition timetables and mappers: what each means as a schedule, and what each key maps to."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

import pytest

from state.engine.backfills import InvalidBackfill, intervals_in
from tradewind import (
    DAG,
    AllowedKeyMapper,
    Asset,
    CronPartitionTimetable,
    DayWindow,
    FanOutMapper,
    FixedKeyMapper,
    IdentityMapper,
    MinimumCount,
    MonthWindow,
    PartitionedAssetTimetable,
    PartitionedAtRuntime,
    ProductMapper,
    RollupMapper,
    SegmentWindow,
    StartOfDayMapper,
    StartOfHourMapper,
    StartOfMonthMapper,
    StartOfWeekMapper,
    StartOfYearMapper,
    WaitForAll,
    WeekWindow,
    Window,
)
from tradewind.assets import InvalidAsset
from tradewind.exceptions import DagDefinitionError
from tradewind.partition_specs import Mappers

KEY = "2026-06-14T03:25:00"  # a Sunday


@pytest.mark.parametrize(
    ("mapper", "expected"),
    [
        (IdentityMapper(), KEY),
        (StartOfHourMapper(), "2026-06-14T03"),
        (StartOfDayMapper(), "2026-06-14"),
        (StartOfWeekMapper(), "2026-06-08"),
        (StartOfMonthMapper(), "2026-06"),
        (StartOfYearMapper(), "2026"),
        (FixedKeyMapper("all"), "all"),
    ],
)
def test_a_mapper_maps_a_key_downstream(mapper: IdentityMapper, expected: str) -> None:
    assert mapper.to_downstream(KEY) == expected


def test_composite_and_allowed_keys() -> None:
    product = ProductMapper(IdentityMapper(), StartOfDayMapper())
    assert product.to_downstream(f"us|{KEY}") == "us|2026-06-14"
    with pytest.raises(InvalidAsset, match="has 1 segments, not 2"):
        product.to_downstream("us")
    with pytest.raises(InvalidAsset, match="'mars' is not one of"):
        AllowedKeyMapper(["us", "eu"]).to_downstream("mars")
    with pytest.raises(InvalidAsset, match="is not '%Y-%m'"):
        StartOfYearMapper(input_format="%Y-%m").to_downstream(KEY)


def test_partition_timetables_schedule_as_cron_assets_or_nothing() -> None:
    hourly = DAG("hourly", schedule=CronPartitionTimetable("0 * * * *", timezone="UTC"))
    assert hourly.structure()["schedule"] == "0 * * * *"
    table = PartitionedAssetTimetable(assets=Asset("s3://a") & Asset.ref(name="b"))
    on_assets = DAG("on_assets", schedule=table)
    assert on_assets.structure()["asset_condition"] == {
        "all": [{"asset": "s3://a"}, {"asset_name": "b"}]
    }
    assert DAG("runtime", schedule=PartitionedAtRuntime()).structure()["schedule"] is None


def test_backfill_intervals_start_within_the_range() -> None:
    day = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    found = intervals_in("@daily", day, day, day + dt.timedelta(days=2))
    assert [start.day for start, _ in found] == [1, 2, 3]
    assert found[0][1] == day + dt.timedelta(days=1)
    with pytest.raises(InvalidBackfill, match="@once"):
        intervals_in("@once", day, day, day)


def test_a_rollup_expects_every_member_of_its_window() -> None:
    daily = RollupMapper(upstream_mapper=StartOfDayMapper(), window=DayWindow())
    assert daily.to_downstream("2026-06-14T03:00:00") == "2026-06-14"
    expected = daily.expected("2026-06-14")
    assert len(expected) == 24
    assert min(expected) == "2026-06-14T00:00:00" and max(expected) == "2026-06-14T23:00:00"
    monthly = RollupMapper(
        upstream_mapper=StartOfMonthMapper(input_format="%Y-%m-%d"), window=MonthWindow()
    )
    assert sorted(monthly.expected("2024-02"))[-1] == "2024-02-29"  # a leap year's February
    regions = RollupMapper(
        upstream_mapper=FixedKeyMapper("all"), window=SegmentWindow(["us", "eu"])
    )
    assert regions.to_downstream("us") == "all"
    assert regions.expected("all") == {"us", "eu"}


def test_wait_policies_count_what_arrived_of_the_window() -> None:
    window = frozenset({"us", "eu", "apac"})
    assert not WaitForAll().satisfied({"us", "eu"}, window)
    assert WaitForAll().satisfied({"us", "eu", "apac", "mars"}, window)
    assert MinimumCount(2).satisfied({"us", "mars", "eu"}, window)
    assert not MinimumCount(2).satisfied({"us", "mars"}, window)
    assert MinimumCount(-1).satisfied({"us", "eu"}, window)  # at most one missing
    with pytest.raises(InvalidAsset, match="non-zero integer"):
        MinimumCount(0)


def test_a_fan_out_makes_a_key_of_each_member() -> None:
    forward = FanOutMapper(upstream_mapper=StartOfWeekMapper(), window=WeekWindow())
    assert forward.to_downstream(KEY) == [f"2026-06-{day:02}" for day in range(8, 15)]
    backward = FanOutMapper(
        upstream_mapper=StartOfWeekMapper(), window=WeekWindow(Window.Direction.BACKWARD)
    )
    assert backward.to_downstream(KEY) == [f"2026-06-{day:02}" for day in range(2, 9)]
    segments = FanOutMapper(window=SegmentWindow(["us", "eu"]), downstream_mapper=IdentityMapper())
    assert segments.to_downstream("live") == ["us", "eu"]
    capped = FanOutMapper(
        upstream_mapper=StartOfWeekMapper(), window=WeekWindow(), max_downstream_keys=3
    )
    with pytest.raises(InvalidAsset, match="fans out to 7 keys, more than max_downstream_keys=3"):
        capped.to_downstream(KEY)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: RollupMapper(upstream_mapper=StartOfDayMapper()), "needs a window"),
        (lambda: RollupMapper(window=DayWindow()), "DayWindow needs a StartOf...Mapper"),
        (lambda: FanOutMapper(window=SegmentWindow(["a"])), "needs a downstream_mapper"),
        (lambda: SegmentWindow([]), "non-empty list of keys"),
    ],
)
def test_a_mapper_that_cannot_work_is_refused_when_built(build: Any, message: str) -> None:
    with pytest.raises(InvalidAsset, match=re.escape(message)):
        build()


def test_the_mappers_are_stored_with_the_dag_and_rebuilt_alike() -> None:
    hourly, regions = Asset("s3://hourly"), Asset.ref(name="regions")
    rollup = RollupMapper(
        upstream_mapper=StartOfDayMapper(), window=DayWindow(), wait_policy=MinimumCount(-2)
    )
    table = PartitionedAssetTimetable(
        assets=hourly & regions,
        default_partition_mapper=ProductMapper(IdentityMapper(), StartOfDayMapper()),
        partition_mapper_config={hourly: rollup, regions: AllowedKeyMapper(["us"])},
    )
    stored = DAG("partitioned", schedule=table).structure()["partition_mappers"]
    mappers = Mappers(json.loads(json.dumps(stored)))
    rebuilt = mappers.of("s3://hourly", "hourly")
    assert rebuilt == rollup and rebuilt.expected("2026-06-14") == rollup.expected("2026-06-14")
    assert mappers.of("s3://other", "regions").to_downstream("us") == "us"
    assert mappers.of("s3://x", "x").to_downstream(f"us|{KEY}") == "us|2026-06-14"
    assert "partition_mappers" not in DAG("plain", schedule=[hourly]).structure()


def test_a_mapper_of_its_own_class_fails_the_dag_in_one_line() -> None:
    class Shout(IdentityMapper):
        def to_downstream(self, key: str) -> str:
            return key.upper()

    table = PartitionedAssetTimetable(assets=Asset("s3://a"), default_partition_mapper=Shout())
    with pytest.raises(
        DagDefinitionError, match="partition mapper Shout is not one of Tradewind's"
    ):
        DAG("custom", schedule=table)
