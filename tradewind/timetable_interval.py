"""Data-interval timetables (Airflow 2's meaning of a schedule): each run covers one period.

``CronDataIntervalTimetable`` and ``DeltaDataIntervalTimetable`` cut time into back-to-back
periods; the run for ``[start, end]`` is due at ``end`` and its logical date is ``start`` (a
daily run's ``ds`` is the day it covers, yesterday). With ``catchup`` every period from
``start_date`` on runs, in order; without, only the latest one that has ended (the one ending
now, or the last before now), and none older.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from dateutil.relativedelta import relativedelta

from tradewind import timetable_base
from tradewind.timetable_base import (
    DagRunInfo,
    DataInterval,
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


class _DataIntervalTimetable(Timetable):
    points: CronPoints | DeltaPoints

    def _skip_to_latest(self, earliest: dt.datetime | None) -> dt.datetime:
        raise NotImplementedError

    def _first_start(self, restriction: TimeRestriction) -> dt.datetime | None:
        """The earliest start a period may have: aligned, and without catchup the latest."""
        if not restriction.catchup:
            return self._skip_to_latest(restriction.earliest)
        if restriction.earliest is None:
            return None
        return self.points.align_next(restriction.earliest)

    def next_dagrun_info(
        self,
        *,
        last_automated_data_interval: DataInterval | None,
        restriction: TimeRestriction,
    ) -> DagRunInfo | None:
        earliest = self._first_start(restriction)
        last = last_automated_data_interval
        if last is None:
            if earliest is None:
                return None
            start = earliest
        else:
            # A changed schedule: the period after the last one starts on the new grid.
            start = self.points.align_prev(last.end)
            start = start if earliest is None else max(start, earliest)
            if start <= last.start:
                start = self.points.next(start)
        if restriction.latest is not None and start > restriction.latest:
            return None
        return DagRunInfo.interval(start, self.points.next(start))


class CronDataIntervalTimetable(_DataIntervalTimetable):
    """Periods between consecutive points of ``cron``, read in ``timezone``."""

    points: CronPoints

    @refused_at_validate
    def __init__(self, cron: str, timezone: Any) -> None:
        self.points = CronPoints(cron, parse_timezone(timezone))
        self.description = self.points.expression

    @classmethod
    def deserialize(cls, data: dict[str, Any]) -> Timetable:
        return cls(data["expression"], timezone_of_name(data["timezone"]))

    def serialize(self) -> dict[str, Any]:
        return {"expression": self.points.expression, "timezone": timezone_name(self.points.tz)}

    @property
    def summary(self) -> str:
        return self.points.expression

    def _skip_to_latest(self, earliest: dt.datetime | None) -> dt.datetime:
        # The latest period that has ended: the one ending now when now is a point.
        now = timetable_base.utcnow()
        last_start = self.points.prev(now)
        on_point = self.points.next(last_start) == now
        start = last_start if on_point else self.points.prev(last_start)
        return start if earliest is None else max(start, self.points.align_next(earliest))

    def infer_manual_data_interval(self, *, run_after: dt.datetime) -> DataInterval:
        end = self.points.align_prev(run_after)
        return DataInterval(self.points.prev(end), end)


class DeltaDataIntervalTimetable(_DataIntervalTimetable):
    """Periods of ``delta``, counted from ``start_date``."""

    points: DeltaPoints

    @refused_at_validate
    def __init__(self, delta: Delta) -> None:
        self.points = DeltaPoints(delta)
        self.description = str(delta)

    @classmethod
    def deserialize(cls, data: dict[str, Any]) -> Timetable:
        return cls(decode_delta(data["delta"]))

    def serialize(self) -> dict[str, Any]:
        return {"delta": encode_delta(self.points.delta)}

    @property
    def summary(self) -> str:
        return str(self.points.delta)

    def _skip_to_latest(self, earliest: dt.datetime | None) -> dt.datetime:
        now = timetable_base.utcnow()
        start = self.points.prev(self._floor(now, earliest or now))
        return start if earliest is None else max(start, earliest)

    def _floor(self, moment: dt.datetime, anchor: dt.datetime) -> dt.datetime:
        """The period boundary at or before ``moment``: on the epoch's grid for a fixed delta
        (as Airflow does), stepped from ``anchor`` for months and years."""
        delta = self.points.delta
        if isinstance(delta, relativedelta) and (delta.months or delta.years):
            boundary = anchor
            while self.points.next(boundary) <= moment:
                boundary = self.points.next(boundary)
            return boundary
        seconds = delta.total_seconds() if isinstance(delta, dt.timedelta) else _seconds_of(delta)
        stamp = moment.timestamp()
        return dt.datetime.fromtimestamp(stamp - stamp % seconds, dt.UTC)

    def infer_manual_data_interval(self, *, run_after: dt.datetime) -> DataInterval:
        return DataInterval(self.points.prev(run_after), run_after)


def _seconds_of(delta: relativedelta) -> float:
    days: int = delta.days + delta.leapdays
    return float(days * 86400 + delta.hours * 3600 + delta.minutes * 60 + delta.seconds)
