"""``BranchDateTimeOperator`` and ``BranchDayOfWeekOperator``: branch on the date or the day.

Both follow ``follow_task_ids_if_true`` when the moment matches and ``follow_task_ids_if_false``
when it does not; the moment is now, or the run's logical date with
``use_task_logical_date=True`` (for backfills). Times without a zone are in the DAG's zone: its
``start_date``'s, else UTC, as Airflow's default.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from tradewind.exceptions import DagDefinitionError
from tradewind.standard.branch import BaseBranchOperator
from tradewind.standard.weekday import WeekDay, week_days

Target = dt.datetime | dt.time | None


class _DateBranch(BaseBranchOperator):
    def __init__(
        self,
        *,
        follow_task_ids_if_true: str | Iterable[str],
        follow_task_ids_if_false: str | Iterable[str],
        use_task_logical_date: bool = False,
        **kwargs: Any,
    ) -> None:
        self.follow_task_ids_if_true = follow_task_ids_if_true
        self.follow_task_ids_if_false = follow_task_ids_if_false
        self.use_task_logical_date = bool(use_task_logical_date)
        super().__init__(**kwargs)

    def zone(self) -> dt.tzinfo:
        start = getattr(self.dag, "start_date", None)
        return (start.tzinfo if start is not None else None) or dt.UTC

    def moment(self, context: dict[str, Any]) -> dt.datetime:
        """The run's logical date, or now (``use_task_logical_date``), in the DAG's zone."""
        if self.use_task_logical_date:
            moment = context.get("logical_date") or context["dag_run"].logical_date
            if moment is not None:
                return aware(moment, dt.UTC).astimezone(self.zone())
        return dt.datetime.now(self.zone())


def aware(moment: dt.datetime, zone: dt.tzinfo) -> dt.datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=zone)


class BranchDateTimeOperator(_DateBranch):
    """True when the moment is between ``target_lower`` and ``target_upper`` (either may be
    None; times of day are taken on the moment's date, the upper on the next day if earlier)."""

    def __init__(self, *, target_lower: Target, target_upper: Target, **kwargs: Any) -> None:
        if target_lower is None and target_upper is None:
            raise DagDefinitionError(
                f"BranchDateTimeOperator {kwargs.get('task_id', '')}: target_lower and "
                "target_upper are both None: give at least one"
            )
        self.target_lower = target_lower
        self.target_upper = target_upper
        super().__init__(**kwargs)

    def choose_branch(self, context: dict[str, Any]) -> Any:
        now = self.moment(context)
        lower, upper = target_times_as_dates(now, self.target_lower, self.target_upper)
        if upper is not None and upper < now:
            return self.follow_task_ids_if_false
        if lower is not None and lower > now:
            return self.follow_task_ids_if_false
        return self.follow_task_ids_if_true


def target_times_as_dates(
    base: dt.datetime, lower: Target, upper: Target
) -> tuple[dt.datetime | None, dt.datetime | None]:
    """The bounds as aware datetimes: a time of day on ``base``'s date, in ``base``'s zone
    unless it has its own; an upper time earlier than the lower one is on the next day."""
    zone = base.tzinfo or dt.UTC
    bounds = [_on(base, bound, zone) for bound in (lower, upper)]
    low, high = bounds
    crossing = isinstance(lower, dt.time) or isinstance(upper, dt.time)
    if crossing and low is not None and high is not None and high < low:
        high += dt.timedelta(days=1)  # a window across midnight
    return low, high


def _on(base: dt.datetime, bound: Target, zone: dt.tzinfo) -> dt.datetime | None:
    if isinstance(bound, dt.datetime):
        return aware(bound, zone)
    if isinstance(bound, dt.time):
        return dt.datetime.combine(base.date(), bound, tzinfo=bound.tzinfo or zone)
    return None


class BranchDayOfWeekOperator(_DateBranch):
    """True when the moment's day is one of ``week_day`` (a name, a ``WeekDay``, or a set)."""

    def __init__(self, *, week_day: Any, **kwargs: Any) -> None:
        self.week_day = week_day
        self._days = week_days(f"BranchDayOfWeekOperator {kwargs.get('task_id', '')}", week_day)
        super().__init__(**kwargs)

    def choose_branch(self, context: dict[str, Any]) -> Any:
        day = self.moment(context).isoweekday()
        print(f"day of week: {WeekDay(day).name}", flush=True)
        if day in self._days:
            return self.follow_task_ids_if_true
        return self.follow_task_ids_if_false
