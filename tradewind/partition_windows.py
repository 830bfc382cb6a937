"""Windows and wait policies: which upstream partitions make one downstream partition, and when
a rollup has enough of them.

A window lists the members of one period from its anchor (the period's start, decoded from the
downstream key by the rollup's upstream mapper, or nothing for a segment window). A rollup
expects those members as upstream keys; a fan-out makes one downstream key of each. Pure
functions: the scheduler's bookkeeping (``scheduler/partition_runs.py``) calls them.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Sequence, Set
from dataclasses import dataclass

from tradewind.assets import InvalidAsset


class Window:
    """A set of partitions that make one whole (a day of hours, a fixed set of segments)."""

    class Direction(enum.Enum):
        FORWARD = "forward"
        BACKWARD = "backward"

    #: Whether the members are times (decoded by a time mapper) or fixed keys.
    temporal = True

    def __init__(self, direction: Window.Direction = Direction.FORWARD) -> None:
        self.direction = Window.Direction(direction)

    def members(self, anchor: dt.datetime) -> list[dt.datetime]:
        """The period's members, from ``anchor`` on (forward) or up to it (backward)."""
        raise NotImplementedError

    def _steps(self, anchor: dt.datetime, count: int, step: dt.timedelta) -> list[dt.datetime]:
        backward = self.direction is Window.Direction.BACKWARD
        first = anchor - step * (count - 1) if backward else anchor
        return [first + step * n for n in range(count)]

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.direction.value})"


class DayWindow(Window):
    """The 24 hours of a day."""

    def members(self, anchor: dt.datetime) -> list[dt.datetime]:
        return self._steps(anchor, 24, dt.timedelta(hours=1))


class WeekWindow(Window):
    """The seven days of a week."""

    def members(self, anchor: dt.datetime) -> list[dt.datetime]:
        return self._steps(anchor, 7, dt.timedelta(days=1))


class MonthWindow(Window):
    """The days of a calendar month (backward: the days after the same day a month before, up
    to the anchor)."""

    def members(self, anchor: dt.datetime) -> list[dt.datetime]:
        if anchor.day != 1:
            raise InvalidAsset(f"MonthWindow: a period starts on day 1, got {anchor:%Y-%m-%d}")
        if self.direction is Window.Direction.BACKWARD:
            before = _add_months(anchor, -1)
            days = (anchor - before).days
            return [before + dt.timedelta(days=n + 1) for n in range(days)]
        days = (_add_months(anchor, 1) - anchor).days
        return [anchor + dt.timedelta(days=n) for n in range(days)]


def _add_months(moment: dt.datetime, months: int) -> dt.datetime:
    index = moment.year * 12 + moment.month - 1 + months
    return moment.replace(year=index // 12, month=index % 12 + 1)


class SegmentWindow(Window):
    """A fixed set of keys (regions, teams)."""

    temporal = False

    def __init__(
        self, keys: Sequence[str], direction: Window.Direction = Window.Direction.FORWARD
    ) -> None:
        super().__init__(direction)
        if isinstance(keys, str) or not keys:
            raise InvalidAsset(f"SegmentWindow needs a non-empty list of keys, got {keys!r}")
        for key in keys:
            if not isinstance(key, str) or not key:
                raise InvalidAsset(f"SegmentWindow: a key is a non-empty string, got {key!r}")
        self.keys = list(dict.fromkeys(keys))

    def segments(self) -> list[str]:
        return list(self.keys)

    def __repr__(self) -> str:
        return f"SegmentWindow({self.keys})"


@dataclass(frozen=True)
class WaitForAll:
    """A rollup waits for every partition of its window (the default)."""

    def satisfied(self, arrived: Set[str], expected: Set[str]) -> bool:
        return expected <= arrived


@dataclass(frozen=True)
class MinimumCount:
    """A rollup fires once ``count`` partitions arrived (negative: at most that many missing)."""

    count: int

    def __post_init__(self) -> None:
        if not isinstance(self.count, int) or isinstance(self.count, bool) or self.count == 0:
            raise InvalidAsset(f"MinimumCount: count is a non-zero integer, got {self.count!r}")

    def satisfied(self, arrived: Set[str], expected: Set[str]) -> bool:
        needed = self.count if self.count > 0 else max(0, len(expected) + self.count)
        return len(arrived & expected) >= needed
