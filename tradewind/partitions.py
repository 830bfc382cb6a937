"""Partitioned assets (Airflow 3.3): partition timetables, partition mappers and their windows.

``CronPartitionTimetable`` runs on a cron schedule, each run one partition of its outlets;
``PartitionedAssetTimetable`` schedules on assets as a condition does; ``PartitionedAtRuntime``
leaves the keys to the task (``outlet_events[asset].add_partitions(...)``). A mapper turns an
upstream partition key into the downstream one (``to_downstream``), as pure functions.

A ``CronPartitionTimetable`` DAG's scheduled run is the partition of its logical date
(``run_partition_key``): its asset outlets' events carry that key. What Tradewind does not do
yet: a downstream run per *aligned* partition key. A partitioned
asset schedule creates a run when its asset condition holds, like any asset schedule, and the
mappers are stored with the DAG's structure for display (docs/airflow-compatibility.md).
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tradewind.assets import BaseAsset, InvalidAsset

#: How a timestamp partition key is written unless a mapper is told otherwise.
KEY_FORMAT = "%Y-%m-%dT%H:%M:%S"


@dataclass(frozen=True)
class CronPartitionTimetable:
    """A cron schedule whose runs are the partitions of the DAG's outlets."""

    cron: str
    timezone: str = "UTC"

    def __post_init__(self) -> None:
        if self.timezone != "UTC":
            raise InvalidAsset(
                f"CronPartitionTimetable: only UTC is supported, got {self.timezone!r}"
            )


@dataclass(frozen=True)
class PartitionedAtRuntime:
    """No schedule of its own: the task names the partitions it wrote (``add_partitions``)."""


class PartitionMapper:
    """Maps an upstream partition key to the downstream key (identity unless overridden)."""

    def to_downstream(self, key: str) -> str | list[str]:
        return key

    def describe(self) -> dict[str, Any]:
        return {"mapper": type(self).__name__}


class IdentityMapper(PartitionMapper):
    """The downstream key is the upstream key."""


@dataclass(frozen=True)
class _StartOf(PartitionMapper):
    input_format: str = KEY_FORMAT
    output_format: str = ""

    def _floor(self, moment: dt.datetime) -> dt.datetime:
        raise NotImplementedError

    def to_downstream(self, key: str) -> str:
        try:
            moment = dt.datetime.strptime(key, self.input_format)
        except ValueError:
            raise InvalidAsset(
                f"{type(self).__name__}: partition key {key!r} is not {self.input_format!r}"
            ) from None
        return self._floor(moment).strftime(self.output_format or self.default_output)

    default_output = KEY_FORMAT


class StartOfHourMapper(_StartOf):
    default_output = "%Y-%m-%dT%H"

    def _floor(self, moment: dt.datetime) -> dt.datetime:
        return moment.replace(minute=0, second=0, microsecond=0)


class StartOfDayMapper(_StartOf):
    default_output = "%Y-%m-%d"

    def _floor(self, moment: dt.datetime) -> dt.datetime:
        return moment.replace(hour=0, minute=0, second=0, microsecond=0)


class StartOfWeekMapper(_StartOf):
    default_output = "%Y-%m-%d"

    def _floor(self, moment: dt.datetime) -> dt.datetime:
        day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
        return day - dt.timedelta(days=day.weekday())


class StartOfMonthMapper(_StartOf):
    default_output = "%Y-%m"

    def _floor(self, moment: dt.datetime) -> dt.datetime:
        return moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


class StartOfYearMapper(_StartOf):
    default_output = "%Y"

    def _floor(self, moment: dt.datetime) -> dt.datetime:
        return moment.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)


@dataclass(frozen=True)
class AllowedKeyMapper(PartitionMapper):
    """The key itself, if it is one of ``keys``."""

    keys: Sequence[str] = ()

    def to_downstream(self, key: str) -> str:
        if key not in self.keys:
            raise InvalidAsset(
                f"AllowedKeyMapper: partition key {key!r} is not one of {list(self.keys)}"
            )
        return key


@dataclass(frozen=True)
class FixedKeyMapper(PartitionMapper):
    """Every upstream key maps to the one ``key``."""

    key: str = ""

    def to_downstream(self, key: str) -> str:
        return self.key


class ProductMapper(PartitionMapper):
    """A composite key ``a|b``: each segment mapped by its own mapper."""

    def __init__(self, *mappers: PartitionMapper, delimiter: str = "|") -> None:
        self.mappers, self.delimiter = mappers, delimiter

    def to_downstream(self, key: str) -> str:
        parts = key.split(self.delimiter)
        if len(parts) != len(self.mappers):
            raise InvalidAsset(
                f"ProductMapper: key {key!r} has {len(parts)} segments, not {len(self.mappers)}"
            )
        return self.delimiter.join(
            str(m.to_downstream(p)) for m, p in zip(self.mappers, parts, strict=True)
        )


class Window:
    """A set of partitions that make one whole (a day of hours, a fixed set of segments)."""

    class Direction(enum.Enum):
        FORWARD = "forward"
        BACKWARD = "backward"

    def __init__(self, direction: Window.Direction = Direction.FORWARD) -> None:
        self.direction = direction


class DayWindow(Window):
    """The 24 hours of a day."""


class WeekWindow(Window):
    """The seven days of a week."""


class MonthWindow(Window):
    """The days of a calendar month."""


class SegmentWindow(Window):
    """A fixed set of keys (regions, teams)."""

    def __init__(
        self, keys: Sequence[str], direction: Window.Direction = Window.Direction.FORWARD
    ) -> None:
        super().__init__(direction)
        self.keys = list(keys)


@dataclass(frozen=True)
class WaitForAll:
    """A rollup waits for every partition of its window (the default)."""


@dataclass(frozen=True)
class MinimumCount:
    """A rollup fires once ``count`` partitions arrived (negative: at most that many missing)."""

    count: int


@dataclass(frozen=True)
class RollupMapper(PartitionMapper):
    """Many upstream partitions (a window) roll up into one downstream partition."""

    upstream_mapper: PartitionMapper = field(default_factory=IdentityMapper)
    window: Window | None = None
    wait_policy: WaitForAll | MinimumCount = field(default_factory=WaitForAll)

    def to_downstream(self, key: str) -> str | list[str]:
        return self.upstream_mapper.to_downstream(key)


@dataclass(frozen=True)
class FanOutMapper(PartitionMapper):
    """One upstream partition fans out to the downstream partitions of a window."""

    upstream_mapper: PartitionMapper = field(default_factory=IdentityMapper)
    window: Window | None = None
    downstream_mapper: PartitionMapper | None = None
    max_downstream_keys: int | None = None


class PartitionedAssetTimetable:
    """Schedule on assets whose events carry partition keys, mapped to the downstream's keys."""

    def __init__(
        self,
        *,
        assets: BaseAsset,
        default_partition_mapper: PartitionMapper | None = None,
        partition_mapper_config: Mapping[Any, PartitionMapper] | None = None,
    ) -> None:
        if not isinstance(assets, BaseAsset):
            raise InvalidAsset(
                f"PartitionedAssetTimetable(assets=...) takes assets, got {assets!r}"
            )
        self.assets = assets
        self.default_partition_mapper = default_partition_mapper or IdentityMapper()
        self.partition_mapper_config = dict(partition_mapper_config or {})


def time_schedule_of(schedule: Any) -> Any:
    """What a partition timetable means as a plain schedule (a cron text, None, or assets)."""
    if isinstance(schedule, CronPartitionTimetable):
        return schedule.cron
    if isinstance(schedule, PartitionedAtRuntime):
        return None
    if isinstance(schedule, PartitionedAssetTimetable):
        return schedule.assets
    return schedule


def run_partition_key(schedule: Any, run_type: str, logical_date: dt.datetime | None) -> str | None:
    """The partition a run is: its logical date, for a ``CronPartitionTimetable`` DAG's
    scheduled (or backfilled) runs; None for any other run."""
    if not isinstance(schedule, CronPartitionTimetable) or logical_date is None:
        return None
    return logical_date.strftime(KEY_FORMAT) if run_type in ("scheduled", "backfill") else None
