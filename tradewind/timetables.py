"""When a scheduled DAG runs: cron expressions, ``@daily``-style presets, and fixed intervals.

A DAG's ``schedule`` cuts time into data intervals ``[start, end)``; the run for an interval is
due once ``end`` has passed and carries both ends (``data_interval_start`` / ``_end``, with
``logical_date`` = ``end``, the moment the run became due). Cron expressions are evaluated by
croniter in the timezone of the DAG's ``start_date`` (UTC without one), as Airflow reads them;
the points are stored in UTC. ``@once`` runs once, at ``start_date`` (or as soon as the DAG is
seen). A timetable object as ``schedule`` takes Airflow's own rules instead
(``tradewind/timetable_store.py``).

``catchup=False`` (the default) runs only the latest interval that has ended, skipping any that
ended while the scheduler was down or the DAG paused; ``catchup=True`` runs every interval from
``start_date`` on, in order.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Protocol

from croniter import croniter

from tradewind.timezones import as_utc, timezone_name, timezone_of_name

PRESETS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@quarterly": "0 0 1 */3 *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
_TICK = dt.timedelta(microseconds=1)
Interval = tuple[dt.datetime, dt.datetime]


class InvalidSchedule(ValueError):
    """A ``schedule`` that is not a cron expression, a preset or a positive timedelta."""


class Timetable(Protocol):
    """Points in time that bound data intervals."""

    def first_at_or_after(self, moment: dt.datetime) -> dt.datetime: ...

    def last_at_or_before(self, moment: dt.datetime) -> dt.datetime: ...

    def after(self, point: dt.datetime) -> dt.datetime: ...

    def before(self, point: dt.datetime) -> dt.datetime: ...


@dataclass(frozen=True)
class CronTimetable:
    expression: str
    tz: dt.tzinfo = dt.UTC

    def first_at_or_after(self, moment: dt.datetime) -> dt.datetime:
        return self._next(moment - _TICK)

    def last_at_or_before(self, moment: dt.datetime) -> dt.datetime:
        return self._prev(moment + _TICK)

    def after(self, point: dt.datetime) -> dt.datetime:
        return self._next(point)

    def before(self, point: dt.datetime) -> dt.datetime:
        return self._prev(point)

    def _next(self, moment: dt.datetime) -> dt.datetime:
        return as_utc(croniter(self.expression, moment.astimezone(self.tz)).get_next(dt.datetime))

    def _prev(self, moment: dt.datetime) -> dt.datetime:
        return as_utc(croniter(self.expression, moment.astimezone(self.tz)).get_prev(dt.datetime))


@dataclass(frozen=True)
class DeltaTimetable:
    """Every ``every``, counted from ``anchor`` (the DAG's start_date)."""

    every: dt.timedelta
    anchor: dt.datetime

    def first_at_or_after(self, moment: dt.datetime) -> dt.datetime:
        steps = -((self.anchor - moment) // self.every)  # ceiling division
        return self.anchor + steps * self.every

    def last_at_or_before(self, moment: dt.datetime) -> dt.datetime:
        return self.anchor + ((moment - self.anchor) // self.every) * self.every

    def after(self, point: dt.datetime) -> dt.datetime:
        return self.last_at_or_before(point) + self.every

    def before(self, point: dt.datetime) -> dt.datetime:
        return self.first_at_or_after(point) - self.every


def parse_schedule(schedule: str | dt.timedelta | None) -> str | None:
    """The stored text of a DAG's ``schedule``, checked; ``InvalidSchedule`` says what is wrong."""
    if schedule is None:
        return None
    if isinstance(schedule, dt.timedelta):
        if schedule <= dt.timedelta(0):
            raise InvalidSchedule(f"schedule interval must be positive, got {schedule}")
        return f"interval:{schedule.total_seconds():g}"
    if not isinstance(schedule, str):
        raise InvalidSchedule(f"schedule must be a cron string or a timedelta, got {schedule!r}")
    if schedule == "@once" or schedule in PRESETS:
        return schedule
    if schedule.startswith("@"):
        known = ", ".join(["@once", *PRESETS])
        raise InvalidSchedule(f"unknown schedule preset {schedule!r} (known: {known})")
    if not croniter.is_valid(schedule) or len(schedule.split()) != 5:
        raise InvalidSchedule(f"invalid cron expression {schedule!r} (five fields, in UTC)")
    return schedule


def timetable_of(schedule: str, anchor: dt.datetime, timezone: str = "UTC") -> Timetable | None:
    """The timetable of a stored schedule text (a cron one read in ``timezone``); None for
    ``@once``."""
    if schedule == "@once":
        return None
    if schedule.startswith("interval:"):
        seconds = float(schedule.removeprefix("interval:"))
        return DeltaTimetable(dt.timedelta(seconds=seconds), anchor)
    return CronTimetable(PRESETS.get(schedule, schedule), timezone_of_name(timezone))


def timezone_structure(schedule: object, start_date: dt.datetime | None) -> dict[str, str]:
    """``{"timezone": name}`` when a cron string is read in a timezone other than UTC (the
    ``start_date``'s); nothing otherwise, so other DAGs keep their version hashes."""
    if not isinstance(schedule, str) or schedule in ("@once", "@continuous"):
        return {}
    if start_date is None or start_date.tzinfo is None:
        return {}
    name = timezone_name(start_date.tzinfo)
    return {} if name == "UTC" else {"timezone": name}


@dataclass(frozen=True)
class ScheduleSpec:
    """What of a DAG decides its next data interval."""

    schedule: str
    start_date: dt.datetime | None
    catchup: bool
    timezone: str = "UTC"  # the one a cron schedule is read in


def next_interval(
    spec: ScheduleSpec, last_end: dt.datetime | None, now: dt.datetime
) -> Interval | None:
    """The next interval to run after one ending at ``last_end`` (None: none ran yet).

    None when there is no next interval (``@once`` already ran). The interval returned may
    still be in the future: its run is due when its end has passed. Without a ``start_date``
    the first interval starts at ``now``: nothing runs for time before the DAG was scheduled.
    """
    if spec.schedule == "@once":
        at = spec.start_date or now
        return None if last_end is not None else (at, at)
    # Intervals of a timedelta count from start_date, or go on from the last run's end.
    table = timetable_of(spec.schedule, spec.start_date or last_end or now, spec.timezone)
    assert table is not None
    known = [t for t in (last_end, spec.start_date) if t is not None]
    start = table.first_at_or_after(max(known) if known else now)
    end = table.after(start)
    if not spec.catchup and end <= now:
        end = table.last_at_or_before(now)  # the latest interval that has ended, nothing older
        start = table.before(end)
    return start, end
