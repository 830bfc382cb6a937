"""``WeekDay``: the days of the week by ISO number, and what a ``week_day`` argument may be.

``BranchDayOfWeekOperator`` and ``DayOfWeekSensor`` take a day's name (any case), a ``WeekDay``,
or a set or list of them, as the standard provider's ``airflow.providers.standard.utils.weekday``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

from tradewind.exceptions import DagDefinitionError


@enum.unique
class WeekDay(enum.IntEnum):
    """A day of the week, numbered as ``datetime.isoweekday()`` numbers it."""

    MONDAY = 1
    TUESDAY = 2
    WEDNESDAY = 3
    THURSDAY = 4
    FRIDAY = 5
    SATURDAY = 6
    SUNDAY = 7

    @classmethod
    def get_weekday_number(cls, week_day_str: str) -> int:
        try:
            return cls[week_day_str.upper()]
        except KeyError:
            raise AttributeError(f"Invalid Week Day passed: {week_day_str!r}") from None

    @classmethod
    def convert(cls, day: str | WeekDay) -> int:
        return day if isinstance(day, WeekDay) else cls.get_weekday_number(day)

    @classmethod
    def validate_week_day(cls, week_day: Any) -> set[int]:
        """The ISO numbers of ``week_day``: a name, a ``WeekDay``, or an iterable of them."""
        if isinstance(week_day, str | WeekDay):
            week_day = {week_day}
        if not isinstance(week_day, Iterable):
            raise TypeError(
                f"week_day must be a day name, a WeekDay or a set of them, got {week_day!r}"
            )
        return {cls.convert(day) for day in week_day}


def week_days(where: str, week_day: Any) -> set[int]:
    """``WeekDay.validate_week_day`` refusing a bad value in one line at load."""
    try:
        return WeekDay.validate_week_day(week_day)
    except (AttributeError, TypeError) as error:
        names = ", ".join(day.name.capitalize() for day in WeekDay)
        raise DagDefinitionError(f"{where}: week_day: {error} (days: {names})") from None
