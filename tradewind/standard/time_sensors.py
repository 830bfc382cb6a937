"""Sensors that wait for a moment: ``TimeDeltaSensor``, ``TimeSensor``, ``DateTimeSensor``,
``DayOfWeekSensor``, as the standard provider's, in ``poke`` or ``reschedule`` mode.

Each poke compares now (UTC) with its target, so a rescheduled sensor frees its worker slot
while it waits. With ``deferrable=True`` (and in their ``*Async`` forms) the first three defer
on a ``DateTimeTrigger`` at their target instead: no slot and no poke while they wait, the
triggerer wakes them (DESIGN.md §12).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any, ClassVar

from tradewind.dag_context import current_dag
from tradewind.sensor_operator import BaseSensorOperator
from tradewind.standard.weekday import week_days
from tradewind.triggers.temporal import DateTimeTrigger


class _DefersToMoment(BaseSensorOperator):
    """A sensor that waits for a moment: with ``deferrable=True`` it defers until then."""

    can_defer = True

    def target(self, context: dict[str, Any]) -> dt.datetime:
        raise NotImplementedError

    def execute(self, context: dict[str, Any]) -> Any:
        if not self.deferrable:
            return super().execute(context)
        moment = self.target(context)
        if moment <= utcnow():
            print(f"{moment.isoformat()} has passed: not deferring", flush=True)
            return None
        print(f"deferring until {moment.isoformat()}", flush=True)
        self.defer(trigger=DateTimeTrigger(moment), method_name="execute_complete")

    def execute_complete(self, context: dict[str, Any], event: Any = None) -> None:
        """Where the deferred sensor resumes: its moment has come."""
        print(f"resumed: {event}", flush=True)


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def dag_zone() -> dt.tzinfo:
    """The zone of the DAG being built: its ``start_date``'s, else UTC (Airflow's default)."""
    dag = current_dag()
    start = getattr(dag, "start_date", None)
    return (start.tzinfo if start is not None else None) or dt.UTC


class TimeDeltaSensor(_DefersToMoment):
    """Wait until ``delta`` after the run's data interval end (else its logical date);
    ``delta`` is a timedelta, or minutes."""

    template_fields: ClassVar[Sequence[str]] = ("delta",)

    def __init__(self, *, delta: dt.timedelta | int | str, **kwargs: Any) -> None:
        self.delta = delta
        super().__init__(**kwargs)

    def target(self, context: dict[str, Any]) -> dt.datetime:
        delta = self.delta
        if not isinstance(delta, dt.timedelta):
            delta = dt.timedelta(minutes=int(delta))
        base: dt.datetime | None = (
            context.get("data_interval_end") or context["dag_run"].logical_date
        )
        if base is None:  # a run without a logical date: from now, as the wait starts
            base = utcnow()
        return base + delta

    def poke(self, context: dict[str, Any]) -> bool:
        moment = self.target(context)
        print(f"waiting until {moment}", flush=True)
        return bool(utcnow() > moment)


class WaitSensor(BaseSensorOperator):
    """Wait ``time_to_wait`` (a timedelta, or minutes) from the task's start: it sleeps."""

    template_fields: ClassVar[Sequence[str]] = ("time_to_wait",)

    def __init__(self, *, time_to_wait: dt.timedelta | int, **kwargs: Any) -> None:
        self.time_to_wait = time_to_wait
        super().__init__(**kwargs)

    def poke(self, context: dict[str, Any]) -> bool:
        import time

        wait = self.time_to_wait
        seconds = wait.total_seconds() if isinstance(wait, dt.timedelta) else int(wait) * 60
        time.sleep(int(seconds))
        return True


class TimeSensor(_DefersToMoment):
    """Wait until ``target_time`` (a time of day, in the DAG's zone) of the day the DAG file
    was read, as in Airflow."""

    def __init__(self, *, target_time: dt.time, **kwargs: Any) -> None:
        zone = dag_zone()
        moment = dt.datetime.combine(dt.datetime.now(zone).date(), target_time)
        self.target_time = target_time
        self.target_datetime = moment.replace(tzinfo=target_time.tzinfo or zone).astimezone(dt.UTC)
        super().__init__(**kwargs)

    def target(self, context: dict[str, Any]) -> dt.datetime:
        return self.target_datetime

    def poke(self, context: dict[str, Any]) -> bool:
        print(f"waiting for {self.target_datetime.isoformat()}", flush=True)
        return utcnow() > self.target_datetime


class DateTimeSensor(_DefersToMoment):
    """Wait until ``target_time``: a datetime, or an ISO 8601 string (templated, e.g.
    ``"{{ data_interval_end }}"``); without a zone it is UTC."""

    template_fields: ClassVar[Sequence[str]] = ("target_time",)

    def __init__(self, *, target_time: str | dt.datetime, **kwargs: Any) -> None:
        self.target_time = target_time
        super().__init__(**kwargs)

    @property
    def moment(self) -> dt.datetime:
        target = self.target_time
        if isinstance(target, str):
            target = dt.datetime.fromisoformat(target.strip())
        if not isinstance(target, dt.datetime):
            raise TypeError(
                f"task {self.task_id}: target_time must be a datetime or an ISO string, "
                f"got {type(target).__name__}"
            )
        return target if target.tzinfo is not None else target.replace(tzinfo=dt.UTC)

    def target(self, context: dict[str, Any]) -> dt.datetime:
        return self.moment

    def poke(self, context: dict[str, Any]) -> bool:
        print(f"waiting for {self.moment.isoformat()}", flush=True)
        return utcnow() > self.moment


class DayOfWeekSensor(BaseSensorOperator):
    """Wait until one of ``week_day`` (a name, a ``WeekDay``, or a set): today's day (UTC), or
    the run's logical date's with ``use_task_logical_date=True``."""

    def __init__(self, *, week_day: Any, use_task_logical_date: bool = False, **kwargs: Any):
        self.week_day = week_day
        self.use_task_logical_date = bool(use_task_logical_date)
        self._days = week_days(f"DayOfWeekSensor {kwargs.get('task_id', '')}", week_day)
        super().__init__(**kwargs)

    def poke(self, context: dict[str, Any]) -> bool:
        moment = utcnow()
        if self.use_task_logical_date:
            moment = context.get("logical_date") or context["dag_run"].logical_date or moment
        return moment.isoweekday() in self._days


class TimeDeltaSensorAsync(TimeDeltaSensor):
    """``TimeDeltaSensor(deferrable=True)``."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.pop("deferrable", None)
        super().__init__(deferrable=True, **kwargs)


class TimeSensorAsync(TimeSensor):
    """``TimeSensor(deferrable=True)``."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.pop("deferrable", None)
        super().__init__(deferrable=True, **kwargs)


class DateTimeSensorAsync(DateTimeSensor):
    """``DateTimeSensor(deferrable=True)``."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.pop("deferrable", None)
        super().__init__(deferrable=True, **kwargs)
