"""Partitioned assets (Airflow 3.3): partition timetables and partition mappers.

``CronPartitionTimetable`` runs on a cron schedule, each run one partition of its outlets;
``PartitionedAssetTimetable`` schedules on assets, a run per downstream partition key;
``PartitionedAtRuntime`` leaves the keys to the task (``outlet_events[asset].add_partitions``).
A mapper turns an upstream partition key into the downstream one (``to_downstream``), or into
several (``FanOutMapper``, one per member of its window); a ``RollupMapper`` also says which
upstream keys make a downstream key whole (``expected``, from its window,
``tradewind/partition_windows.py``). All pure functions: the scheduler calls them
(``scheduler/partition_runs.py``) on mappers rebuilt from the DAG's stored structure
(``tradewind/partition_specs.py``), and a key a mapper refuses raises ``InvalidAsset`` with the
one line the scheduler logs.

A ``CronPartitionTimetable`` DAG's scheduled run is the partition of its logical date
(``run_partition_key``); a ``PartitionedAssetTimetable`` DAG's run stores its key
(``dag_run.partition_key``). Either way its asset outlets' events carry that key.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tradewind.assets import Asset, AssetNameRef, BaseAsset, InvalidAsset
from tradewind.partition_windows import (
    DayWindow,
    MinimumCount,
    MonthWindow,
    SegmentWindow,
    WaitForAll,
    WeekWindow,
    Window,
)

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

    def partition_date(self, downstream_key: str) -> dt.datetime | None:
        """The start of the period ``downstream_key`` names, for a time mapper; else None."""
        return None

    def describe(self) -> dict[str, Any]:
        return {"mapper": type(self).__name__}


class IdentityMapper(PartitionMapper):
    """The downstream key is the upstream key."""


@dataclass(frozen=True)
class _StartOf(PartitionMapper):
    input_format: str = KEY_FORMAT
    output_format: str = ""

    default_output = KEY_FORMAT

    def _floor(self, moment: dt.datetime) -> dt.datetime:
        raise NotImplementedError

    @property
    def key_format(self) -> str:
        """How this mapper writes a downstream key."""
        return self.output_format or self.default_output

    def to_downstream(self, key: str) -> str:
        return self.format(self.parse(key))

    def parse(self, key: str) -> dt.datetime:
        """The moment an upstream key names (``input_format``)."""
        try:
            return dt.datetime.strptime(key, self.input_format)
        except ValueError:
            raise InvalidAsset(
                f"{type(self).__name__}: partition key {key!r} is not {self.input_format!r}"
            ) from None

    def format(self, moment: dt.datetime) -> str:
        """The downstream key of the period holding ``moment``."""
        return self._floor(moment).strftime(self.key_format)

    def decode(self, downstream_key: str) -> dt.datetime:
        """The start of the period a downstream key names: what a window counts from."""
        try:
            return self._floor(dt.datetime.strptime(downstream_key, self.key_format))
        except ValueError:
            raise InvalidAsset(
                f"{type(self).__name__}: downstream key {downstream_key!r} "
                f"is not {self.key_format!r}"
            ) from None

    def encode(self, moment: dt.datetime) -> str:
        """``moment`` as an upstream key, as producers write it (``input_format``)."""
        return moment.strftime(self.input_format)

    def partition_date(self, downstream_key: str) -> dt.datetime:
        return self.decode(downstream_key).replace(tzinfo=dt.UTC)


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


@dataclass(frozen=True)
class RollupMapper(PartitionMapper):
    """Many upstream partitions (a window) roll up into one downstream partition.

    The downstream run waits until ``wait_policy`` is satisfied by the upstream keys that
    arrived among those the window expects (``expected``).
    """

    upstream_mapper: PartitionMapper = field(default_factory=IdentityMapper)
    window: Window | None = None
    wait_policy: WaitForAll | MinimumCount = field(default_factory=WaitForAll)

    def __post_init__(self) -> None:
        if self.window is None:
            raise InvalidAsset("RollupMapper needs a window (DayWindow(), SegmentWindow([...]))")
        _check_pairing("RollupMapper", self.upstream_mapper, self.window)

    def to_downstream(self, key: str) -> str | list[str]:
        return self.upstream_mapper.to_downstream(key)

    def expected(self, downstream_key: str) -> frozenset[str]:
        """The upstream keys that make up ``downstream_key`` whole."""
        window = self.window
        assert window is not None  # __post_init__
        if isinstance(window, SegmentWindow):
            return frozenset(window.segments())
        mapper = self.upstream_mapper
        assert isinstance(mapper, _StartOf)  # _check_pairing
        return frozenset(mapper.encode(m) for m in window.members(mapper.decode(downstream_key)))

    def partition_date(self, downstream_key: str) -> dt.datetime | None:
        return self.upstream_mapper.partition_date(downstream_key)


#: The downstream mapper of a fan-out over a time window, unless one is given.
_FAN_OUT_DEFAULTS: dict[type[Window], type[_StartOf]] = {
    DayWindow: StartOfHourMapper,
    WeekWindow: StartOfDayMapper,
    MonthWindow: StartOfDayMapper,
}

#: How many downstream keys one upstream key may fan out to, unless the mapper says otherwise.
MAX_DOWNSTREAM_KEYS = 1000


@dataclass(frozen=True)
class FanOutMapper(PartitionMapper):
    """One upstream partition fans out to the downstream partitions of a window: a run each."""

    upstream_mapper: PartitionMapper = field(default_factory=IdentityMapper)
    window: Window | None = None
    downstream_mapper: PartitionMapper | None = None
    max_downstream_keys: int | None = None

    def __post_init__(self) -> None:
        if self.window is None:
            raise InvalidAsset("FanOutMapper needs a window (WeekWindow(), SegmentWindow([...]))")
        _check_pairing("FanOutMapper", self.upstream_mapper, self.window)
        if self.downstream_mapper is None:
            default = _FAN_OUT_DEFAULTS.get(type(self.window))
            if default is None:
                raise InvalidAsset(
                    f"FanOutMapper over {type(self.window).__name__} needs a downstream_mapper"
                )
            object.__setattr__(self, "downstream_mapper", default())
        cap = self.max_downstream_keys
        if cap is not None and (not isinstance(cap, int) or cap < 1):
            raise InvalidAsset(f"FanOutMapper: max_downstream_keys is a positive int, got {cap!r}")

    def to_downstream(self, key: str) -> list[str]:
        coarse = self.upstream_mapper.to_downstream(key)
        if not isinstance(coarse, str):
            raise InvalidAsset("FanOutMapper: its upstream_mapper must map a key to one key")
        keys = self._fan_out(coarse)
        cap = self.max_downstream_keys or MAX_DOWNSTREAM_KEYS
        if len(keys) > cap:
            raise InvalidAsset(
                f"FanOutMapper: key {key!r} fans out to {len(keys)} keys, "
                f"more than max_downstream_keys={cap}"
            )
        return keys

    def _fan_out(self, coarse: str) -> list[str]:
        window, downstream = self.window, self.downstream_mapper
        assert window is not None and downstream is not None  # __post_init__
        if isinstance(window, SegmentWindow):
            return _unique(str(downstream.to_downstream(k)) for k in window.segments())
        upstream = self.upstream_mapper
        assert isinstance(upstream, _StartOf)  # _check_pairing
        members = window.members(upstream.decode(coarse))
        if isinstance(downstream, _StartOf):
            return _unique(downstream.format(m) for m in members)
        return _unique(m.strftime(KEY_FORMAT) for m in members)

    def partition_date(self, downstream_key: str) -> dt.datetime | None:
        assert self.downstream_mapper is not None  # __post_init__
        return self.downstream_mapper.partition_date(downstream_key)


def _unique(keys: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(keys))


def _check_pairing(owner: str, mapper: PartitionMapper, window: Window) -> None:
    """A time window needs a time mapper to decode its anchor; a segment window needs none."""
    if window.temporal and not isinstance(mapper, _StartOf):
        raise InvalidAsset(
            f"{owner}: {type(window).__name__} needs a StartOf...Mapper as upstream_mapper, "
            f"got {type(mapper).__name__}"
        )


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
        for asset, mapper in self.partition_mapper_config.items():
            if not isinstance(asset, Asset | AssetNameRef):
                raise InvalidAsset(f"partition_mapper_config is keyed by assets, got {asset!r}")
            if not isinstance(mapper, PartitionMapper):
                raise InvalidAsset(f"partition_mapper_config[{asset!r}] is not a mapper")


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
    return cron_partition(logical_date)[0] if run_type in ("scheduled", "backfill") else None


def cron_partition(logical_date: dt.datetime) -> tuple[str, dt.datetime]:
    """The key and date of a ``CronPartitionTimetable`` DAG's run of ``logical_date``."""
    return logical_date.strftime(KEY_FORMAT), logical_date
