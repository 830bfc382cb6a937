"""Partition mappers as JSON, and back: what a DAG's structure stores for its scheduler.

The scheduler maps keys without importing the DAG's file, so a ``PartitionedAssetTimetable``'s
mappers are stored with the DAG's structure (``partition_mappers``) and rebuilt from it. Only
Tradewind's own mappers, windows and wait policies can be: a DAG whose timetable holds a mapper
of its own class fails its import with one line, rather than be scheduled by something else.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any

from tradewind.assets import InvalidAsset
from tradewind.partition_windows import (
    DayWindow,
    MinimumCount,
    MonthWindow,
    SegmentWindow,
    WaitForAll,
    WeekWindow,
    Window,
)
from tradewind.partitions import (
    AllowedKeyMapper,
    FanOutMapper,
    FixedKeyMapper,
    IdentityMapper,
    PartitionedAssetTimetable,
    PartitionMapper,
    ProductMapper,
    RollupMapper,
    StartOfDayMapper,
    StartOfHourMapper,
    StartOfMonthMapper,
    StartOfWeekMapper,
    StartOfYearMapper,
)

_KINDS: dict[str, type[Any]] = {
    cls.__name__: cls
    for cls in (
        IdentityMapper,
        StartOfHourMapper,
        StartOfDayMapper,
        StartOfWeekMapper,
        StartOfMonthMapper,
        StartOfYearMapper,
        AllowedKeyMapper,
        FixedKeyMapper,
        ProductMapper,
        RollupMapper,
        FanOutMapper,
        DayWindow,
        WeekWindow,
        MonthWindow,
        SegmentWindow,
        WaitForAll,
        MinimumCount,
    )
}


def partition_mappers_of(schedule: Any) -> dict[str, Any] | None:
    """A ``PartitionedAssetTimetable``'s mappers as JSON: its default, and one per asset named
    in its config; None for any other schedule."""
    if not isinstance(schedule, PartitionedAssetTimetable):
        return None
    timetable = schedule
    by_asset = []
    for asset, mapper in timetable.partition_mapper_config.items():
        name = getattr(asset, "uri", None)
        key = "uri" if name is not None else "name"
        by_asset.append({key: name if name is not None else asset.name, "mapper": spec_of(mapper)})
    return {"default": spec_of(timetable.default_partition_mapper), "assets": by_asset}


def spec_of(part: Any) -> Any:
    """``part`` (a mapper, window or wait policy, or a value inside one) as JSON."""
    if isinstance(part, list | tuple):
        return [spec_of(item) for item in part]
    if isinstance(part, enum.Enum):
        return part.value
    if not isinstance(part, PartitionMapper | Window | WaitForAll | MinimumCount):
        return part
    kind = type(part).__name__
    if _KINDS.get(kind) is not type(part):
        raise InvalidAsset(
            f"partition mapper {kind} is not one of Tradewind's: its scheduler cannot rebuild it"
        )
    if isinstance(part, ProductMapper):
        return {"kind": kind, "mappers": spec_of(part.mappers), "delimiter": part.delimiter}
    if isinstance(part, Window):
        return {"kind": kind, **{k: spec_of(v) for k, v in vars(part).items()}}
    fields = dataclasses.fields(part) if dataclasses.is_dataclass(part) else ()
    return {"kind": kind, **{f.name: spec_of(getattr(part, f.name)) for f in fields}}


def from_spec(spec: Any) -> Any:
    """What ``spec_of`` wrote, built again."""
    if isinstance(spec, list):
        return [from_spec(item) for item in spec]
    if not isinstance(spec, Mapping) or "kind" not in spec:
        return spec
    cls = _KINDS[spec["kind"]]
    values = {k: from_spec(v) for k, v in spec.items() if k != "kind"}
    if cls is ProductMapper:
        return ProductMapper(*values["mappers"], delimiter=values["delimiter"])
    if issubclass(cls, Window):
        values["direction"] = Window.Direction(values["direction"])
    return cls(**values)


class Mappers:
    """The mapper of each asset a partitioned DAG is scheduled on, rebuilt from its structure."""

    def __init__(self, stored: Mapping[str, Any]) -> None:
        self.default: PartitionMapper = from_spec(stored["default"])
        self.by_uri: dict[str, PartitionMapper] = {}
        self.by_name: dict[str, PartitionMapper] = {}
        for entry in stored.get("assets", ()):
            table = self.by_uri if "uri" in entry else self.by_name
            table[entry.get("uri") or entry["name"]] = from_spec(entry["mapper"])

    def of(self, uri: str, name: str) -> PartitionMapper:
        """The mapper for the asset ``uri`` named ``name``: by URI, by name, or the default."""
        return self.by_uri.get(uri) or self.by_name.get(name) or self.default
