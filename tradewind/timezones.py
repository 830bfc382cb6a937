"""Timezones as DAG files give them (a name, zoneinfo, pendulum, a fixed offset) and as stored.

Stored as a name: the IANA key, ``UTC``, or ``+HH:MM`` for a fixed offset. pendulum's timezones
are zoneinfo ones (and its fixed ones plain tzinfo), so they need no pendulum here.
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from tradewind.timetable_base import InvalidTimetable


def parse_timezone(value: Any) -> dt.tzinfo:
    """A tzinfo from a name (``"Europe/Amsterdam"``), a zoneinfo, pendulum or fixed-offset one."""
    if isinstance(value, dt.tzinfo):
        return value
    if not isinstance(value, str):
        raise InvalidTimetable(f"timezone must be a name or a tzinfo, got {value!r}")
    if value.upper() == "UTC":
        return dt.UTC
    try:
        return ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidTimetable(f"unknown timezone {value!r} (an IANA name)") from None


def timezone_name(tz: dt.tzinfo) -> str:
    """The stored form of ``tz``: its IANA name, or ``+HH:MM`` for a fixed offset."""
    key = getattr(tz, "key", None) or getattr(tz, "name", None)
    if isinstance(key, str) and key and key[0] not in "+-":
        return "UTC" if tz is dt.UTC else key
    offset = tz.utcoffset(None) or dt.timedelta(0)
    if offset == dt.timedelta(0):
        return "UTC"
    sign, seconds = ("-" if offset < dt.timedelta(0) else "+"), abs(int(offset.total_seconds()))
    return f"{sign}{seconds // 3600:02d}:{seconds % 3600 // 60:02d}"


def timezone_of_name(name: str) -> dt.tzinfo:
    """The tzinfo ``timezone_name`` wrote."""
    if name[0] in "+-":
        return dt.datetime.fromisoformat(f"2000-01-01T00:00:00{name}").tzinfo or dt.UTC
    return parse_timezone(name)


def as_utc(moment: dt.datetime) -> dt.datetime:
    """``moment`` as a plain aware datetime in UTC (a naive one is taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    moment = moment.astimezone(dt.UTC)
    return dt.datetime(*moment.timetuple()[:6], moment.microsecond, tzinfo=dt.UTC)
