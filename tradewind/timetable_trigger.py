"""Trigger timetables (Airflow 3's meaning of a schedule): a run at each point, as cron does.

``CronTriggerTimetable`` runs at each point of its cron expression, ``DeltaTriggerTimetable``
every ``delta``; the run at point ``p`` is due at ``p``, covers ``[p - interval, p]`` (``interval``
defaults to nothing: the run is about the instant ``p``), and its logical date is the interval's
start (``p`` itself by default). With ``catchup`` every point from ``start_date`` on runs;
without, the latest point already passed (or the next one) and none older. Without a
``start_date`` a cron timetable's first run is the point just passed when it is recent
(``run_immediately``: True always, a timedelta within it, otherwise within a tenth of the
period and at least five minutes), else the next one.
``MultipleCronTriggerTimetable`` runs at the points of any of several expressions, once for
points they share.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from tradewind import timetable_base
from tradewind.timetable_base import (
    DagRunInfo,
    DataInterval,
    InvalidTimetable,
    TimeRestriction,
    Timetable,
    refused_at_validate,
)
from tradewind.timetable_points import (
    CronPoints,
    Delta,
    DeltaPoints,
    decode_delta,
    encode_delta,
)
from tradewind.timezones import parse_timezone, timezone_name, timezone_of_name

_FIVE_MINUTES = dt.timedelta(minutes=5)


class _TriggerTimetable(Timetable):
    points: CronPoints | DeltaPoints
    interval: Delta

    def _first_run(self) -> dt.datetime:
        raise NotImplementedError

    def infer_manual_data_interval(self, *, run_after: dt.datetime) -> DataInterval:
        return DataInterval(run_after - self.interval, run_after)

    def next_dagrun_info(
        self,
        *,
        last_automated_data_interval: DataInterval | None,
        restriction: TimeRestriction,
    ) -> DagRunInfo | None:
        point = self._next_point(last_automated_data_interval, restriction)
        if restriction.latest is not None and point > restriction.latest:
            return None
        return DagRunInfo.interval(point - self.interval, point)

    def _next_point(self, last: DataInterval | None, restriction: TimeRestriction) -> dt.datetime:
        earliest = restriction.earliest
        candidates = []
        if last is not None:
            candidates.append(self.points.next(last.end))
        elif earliest is None:
            candidates.append(self._first_run())  # run_immediately matters only here
        if earliest is not None and (last is None or not restriction.catchup):
            candidates.append(self.points.align_next(earliest))
        if not restriction.catchup:
            candidates.append(self.points.align_prev(timetable_base.utcnow()))
        return max(candidates)


class CronTriggerTimetable(_TriggerTimetable):
    """A run at each point of ``cron`` in ``timezone``, over ``[point - interval, point]``."""

    points: CronPoints

    @refused_at_validate
    def __init__(
        self,
        cron: str,
        *,
        timezone: Any,
        interval: Delta = dt.timedelta(0),
        run_immediately: bool | dt.timedelta = False,
    ) -> None:
        self.points = CronPoints(cron, parse_timezone(timezone))
        self.interval = _interval(interval)
        if not isinstance(run_immediately, bool | dt.timedelta):
            raise InvalidTimetable(f"run_immediately: a bool or timedelta, not {run_immediately!r}")
        self.run_immediately = run_immediately
        self.description = self.points.expression

    @classmethod
    def deserialize(cls, data: dict[str, Any]) -> Timetable:
        return cls(
            data["expression"],
            timezone=timezone_of_name(data["timezone"]),
            interval=decode_delta(data["interval"]),
            run_immediately=_decode_run_immediately(data["run_immediately"]),
        )

    def serialize(self) -> dict[str, Any]:
        return {
            "expression": self.points.expression,
            "timezone": timezone_name(self.points.tz),
            "interval": encode_delta(self.interval),
            "run_immediately": _encode_run_immediately(self.run_immediately),
        }

    @property
    def summary(self) -> str:
        return self.points.expression

    def _first_run(self) -> dt.datetime:
        now = timetable_base.utcnow()
        past, coming = self.points.align_prev(now), self.points.align_next(now)
        if self.run_immediately is True:
            return past
        if isinstance(self.run_immediately, dt.timedelta):
            recent = self.run_immediately
        else:
            recent = max((coming - past) / 10, _FIVE_MINUTES)
        return past if now - past <= recent else coming


class DeltaTriggerTimetable(_TriggerTimetable):
    """A run every ``delta`` (from ``start_date``, or from now), over ``[run - interval, run]``."""

    points: DeltaPoints

    @refused_at_validate
    def __init__(self, delta: Delta, *, interval: Delta = dt.timedelta(0)) -> None:
        self.points = DeltaPoints(delta)
        self.interval = _interval(interval)
        self.description = str(delta)

    @classmethod
    def deserialize(cls, data: dict[str, Any]) -> Timetable:
        return cls(decode_delta(data["delta"]), interval=decode_delta(data["interval"]))

    def serialize(self) -> dict[str, Any]:
        return {"delta": encode_delta(self.points.delta), "interval": encode_delta(self.interval)}

    @property
    def summary(self) -> str:
        return str(self.points.delta)

    def _first_run(self) -> dt.datetime:
        return timetable_base.utcnow()


class MultipleCronTriggerTimetable(Timetable):
    """A run at each point of any of ``crons``; one run for a point several of them share."""

    @refused_at_validate
    def __init__(
        self,
        *crons: str,
        timezone: Any,
        interval: Delta = dt.timedelta(0),
        run_immediately: bool | dt.timedelta = False,
    ) -> None:
        if not crons:
            raise InvalidTimetable("MultipleCronTriggerTimetable: give one cron expression or more")
        self.timetables = [
            CronTriggerTimetable(
                cron, timezone=timezone, interval=interval, run_immediately=run_immediately
            )
            for cron in crons
        ]
        for timetable in self.timetables:
            timetable.validate()  # the first bad expression's line
        self.description = ", ".join(t.description for t in self.timetables)

    @classmethod
    def deserialize(cls, data: dict[str, Any]) -> Timetable:
        return cls(
            *data["expressions"],
            timezone=timezone_of_name(data["timezone"]),
            interval=decode_delta(data["interval"]),
            run_immediately=_decode_run_immediately(data["run_immediately"]),
        )

    def serialize(self) -> dict[str, Any]:
        first = self.timetables[0].serialize()  # they share all but the expression
        return {**first, "expressions": [t.points.expression for t in self.timetables]}

    @property
    def summary(self) -> str:
        return ", ".join(t.summary for t in self.timetables)

    def infer_manual_data_interval(self, *, run_after: dt.datetime) -> DataInterval:
        found = (t.infer_manual_data_interval(run_after=run_after) for t in self.timetables)
        return min(found, key=lambda interval: interval.start)

    def next_dagrun_info(
        self,
        *,
        last_automated_data_interval: DataInterval | None,
        restriction: TimeRestriction,
    ) -> DagRunInfo | None:
        infos = [
            t.next_dagrun_info(
                last_automated_data_interval=last_automated_data_interval, restriction=restriction
            )
            for t in self.timetables
        ]
        now = timetable_base.utcnow().timestamp()
        return min(infos, key=lambda info: _rank(info, restriction.catchup, now))


def _rank(info: DagRunInfo | None, catchup: bool, now: float) -> float:
    """Which of the timetables' next runs comes first: the earliest with catchup; without, the
    latest already due, else the earliest to come."""
    if info is None or info.logical_date is None:
        return math.inf
    stamp = info.logical_date.timestamp()
    return -stamp if not catchup and stamp <= now else stamp


def _interval(value: Any) -> Delta:
    if isinstance(value, dt.timedelta):
        return value
    DeltaPoints(value)  # refuses what is not a positive relativedelta
    return value


def _encode_run_immediately(value: bool | dt.timedelta) -> bool | float:
    return value if isinstance(value, bool) else value.total_seconds()


def _decode_run_immediately(value: bool | float) -> bool | dt.timedelta:
    return value if isinstance(value, bool) else dt.timedelta(seconds=value)
