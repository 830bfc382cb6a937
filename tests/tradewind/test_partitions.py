"""Partition timetables and mappers: what each means as a schedule, and what each key maps to."""

from __future__ import annotations

import datetime as dt

import pytest

from state.backfills import InvalidBackfill, intervals_in
from tradewind import (
    DAG,
    AllowedKeyMapper,
    Asset,
    CronPartitionTimetable,
    FixedKeyMapper,
    IdentityMapper,
    PartitionedAssetTimetable,
    PartitionedAtRuntime,
    ProductMapper,
    StartOfDayMapper,
    StartOfHourMapper,
    StartOfMonthMapper,
    StartOfWeekMapper,
    StartOfYearMapper,
)
from tradewind.assets import InvalidAsset

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
