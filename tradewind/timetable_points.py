"""The points in time a timetable runs at: cron points in a timezone, or steps of a delta.

``next`` and ``prev`` are the points strictly after and before a moment; ``align_next`` and
``align_prev`` keep a moment that is a point and otherwise move to the next or previous one (a
delta's points are wherever one starts counting, so it aligns every moment to itself). Cron
expressions are read in the timetable's timezone (croniter keeps the wall clock across daylight
saving changes); every point returned is in UTC.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, TypeAlias

from croniter import croniter
from dateutil.relativedelta import relativedelta

from tradewind.timetable_base import InvalidTimetable
from tradewind.timetables import PRESETS
from tradewind.timezones import as_utc

Delta: TypeAlias = dt.timedelta | relativedelta
#: The relativedelta fields a stored delta keeps (the relative ones; absolute ones are refused).
_RELATIVE = ("years", "months", "days", "leapdays", "hours", "minutes", "seconds", "microseconds")


class CronPoints:
    """The points of a cron expression (or preset) read in ``tz``."""

    def __init__(self, cron: str, tz: dt.tzinfo) -> None:
        if not isinstance(cron, str):
            raise InvalidTimetable(f"a cron expression is a string, got {cron!r}")
        self.expression = PRESETS.get(cron, cron)
        if not croniter.is_valid(self.expression) or len(self.expression.split()) != 5:
            raise InvalidTimetable(f"invalid cron expression {cron!r} (five fields)")
        self.tz = tz

    def next(self, moment: dt.datetime) -> dt.datetime:
        found = croniter(self.expression, moment.astimezone(self.tz)).get_next(dt.datetime)
        return as_utc(found)

    def prev(self, moment: dt.datetime) -> dt.datetime:
        found = croniter(self.expression, moment.astimezone(self.tz)).get_prev(dt.datetime)
        return as_utc(found)

    def align_next(self, moment: dt.datetime) -> dt.datetime:
        following = self.next(moment)
        return moment if self.prev(following) == moment else following

    def align_prev(self, moment: dt.datetime) -> dt.datetime:
        preceding = self.prev(moment)
        return moment if self.next(preceding) == moment else preceding


class DeltaPoints:
    """Steps of ``delta`` (a timedelta, or a relativedelta of months or years)."""

    def __init__(self, delta: Delta) -> None:
        if not isinstance(delta, dt.timedelta | relativedelta):
            raise InvalidTimetable(f"a delta is a timedelta or relativedelta, got {delta!r}")
        now = dt.datetime(2000, 1, 1)
        if now + delta <= now:
            raise InvalidTimetable(f"schedule interval must be positive, got {delta!r}")
        self.delta = delta

    def next(self, moment: dt.datetime) -> dt.datetime:
        return as_utc(moment + self.delta)

    def prev(self, moment: dt.datetime) -> dt.datetime:
        return as_utc(moment - self.delta)

    def align_next(self, moment: dt.datetime) -> dt.datetime:
        return moment

    def align_prev(self, moment: dt.datetime) -> dt.datetime:
        return moment


def encode_delta(delta: Delta) -> Any:
    """A delta as JSON: seconds for a timedelta, the relative fields for a relativedelta."""
    if isinstance(delta, dt.timedelta):
        return delta.total_seconds()
    absolute = [
        name
        for name in ("year", "month", "day", "weekday", "hour", "minute", "second")
        if getattr(delta, name) is not None
    ]
    if absolute:
        raise InvalidTimetable(f"a relativedelta with absolute fields {absolute} cannot be stored")
    return {name: getattr(delta, name) for name in _RELATIVE if getattr(delta, name)}


def decode_delta(value: Any) -> Delta:
    """The delta ``encode_delta`` wrote."""
    if isinstance(value, dict):
        return relativedelta(**value)
    return dt.timedelta(seconds=value)
