"""Timetables that are not a grid of points: never, once, continuously, listed events, and
time or assets.

``ContinuousTimetable`` (``schedule="@continuous"``) asks for the next run as soon as the last
one ends: it allows one active run (``active_runs_limit``), and each run covers the time since the
previous run's interval ended. ``EventsTimetable`` runs at each listed moment.
``AssetOrTimeSchedule`` runs on its timetable's schedule and, apart from it, when its assets are
updated: the scheduler takes the time part here and the asset condition on the asset path
(``scheduler/asset_runs.py``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
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
from tradewind.timezones import as_utc


class _TrivialTimetable(Timetable):
    periodic = False
    run_ordering = ("logical_date",)

    def infer_manual_data_interval(self, *, run_after: dt.datetime) -> DataInterval:
        return DataInterval.exact(run_after)


class NullTimetable(_TrivialTimetable):
    """Never runs on its own (``schedule=None``)."""

    can_be_scheduled = False
    description = "Never, external triggers only"

    def next_dagrun_info(
        self, *, last_automated_data_interval: DataInterval | None, restriction: TimeRestriction
    ) -> DagRunInfo | None:
        return None


class OnceTimetable(_TrivialTimetable):
    """One run, at ``start_date`` or as soon as the DAG is seen (``schedule="@once"``)."""

    description = "Once, as soon as possible"

    def next_dagrun_info(
        self, *, last_automated_data_interval: DataInterval | None, restriction: TimeRestriction
    ) -> DagRunInfo | None:
        if last_automated_data_interval is not None:
            return None
        at = restriction.earliest or timetable_base.utcnow()
        if restriction.latest is not None and at > restriction.latest:
            return None
        return DagRunInfo.exact(at)


class ContinuousTimetable(_TrivialTimetable):
    """A new run as soon as the previous one ends, one at a time (``schedule="@continuous"``)."""

    description = "As frequently as possible, but only one run at a time."
    active_runs_limit = 1

    @property
    def summary(self) -> str:
        return "@continuous"

    def next_dagrun_info(
        self, *, last_automated_data_interval: DataInterval | None, restriction: TimeRestriction
    ) -> DagRunInfo | None:
        now = timetable_base.utcnow()
        begin = restriction.earliest or now
        last = last_automated_data_interval
        if last is None:
            start, end = begin, max(begin, now)
        elif last.end > now:  # the last run is ahead of the clock (a start date in the future)
            start, end = begin, begin + (last.end - last.start)
        else:
            start, end = last.end, now
        if restriction.latest is not None and end > restriction.latest:
            return None
        return DagRunInfo.interval(start, end)


class EventsTimetable(Timetable):
    """A run at each of ``event_dates``, about that moment.

    ``restrict_to_events``: a run triggered by hand is about the latest event before it (the
    first event when none has passed), instead of its own moment.
    """

    @refused_at_validate
    def __init__(
        self,
        event_dates: Iterable[dt.datetime],
        restrict_to_events: bool = False,
        presorted: bool = False,
        description: str | None = None,
    ) -> None:
        dates = [_event(date) for date in event_dates]
        self.event_dates = dates if presorted else sorted(dates)
        self.restrict_to_events = restrict_to_events
        count = len(self.event_dates)
        if description is not None:
            self.description, self._summary = description, description
        elif count:
            first, last = self.event_dates[0].isoformat(), self.event_dates[-1].isoformat()
            self.description, self._summary = (
                f"{count} events between {first} and {last}",
                (f"{count} events"),
            )
        else:
            self.description, self._summary = "No events", "0 events"

    @classmethod
    def deserialize(cls, data: dict[str, Any]) -> Timetable:
        dates = [dt.datetime.fromisoformat(text) for text in data["event_dates"]]
        made = cls(dates, data["restrict_to_events"], True, data["description"])
        made._summary = data["summary"]
        return made

    def serialize(self) -> dict[str, Any]:
        return {
            "event_dates": [date.isoformat() for date in self.event_dates],
            "restrict_to_events": self.restrict_to_events,
            "description": self.description,
            "summary": self._summary,
        }

    @property
    def summary(self) -> str:
        return self._summary

    def next_dagrun_info(
        self, *, last_automated_data_interval: DataInterval | None, restriction: TimeRestriction
    ) -> DagRunInfo | None:
        earliest = restriction.earliest
        if not restriction.catchup:
            now = timetable_base.utcnow()
            earliest = now if earliest is None or now > earliest else earliest
        last_end = last_automated_data_interval.end if last_automated_data_interval else None
        for event in self.event_dates:
            if (earliest is None or event >= earliest) and (last_end is None or event > last_end):
                if restriction.latest is not None and event > restriction.latest:
                    return None
                return DagRunInfo.exact(event)
        return None

    def infer_manual_data_interval(self, *, run_after: dt.datetime) -> DataInterval:
        if not self.restrict_to_events or not self.event_dates:
            return DataInterval.exact(run_after)
        past = [event for event in self.event_dates if event <= run_after]
        return DataInterval.exact(past[-1] if past else self.event_dates[0])


def _event(date: Any) -> dt.datetime:
    if not isinstance(date, dt.datetime):
        raise InvalidTimetable(f"EventsTimetable: event_dates hold datetimes, got {date!r}")
    return as_utc(date)


class AssetOrTimeSchedule(Timetable):
    """Runs on ``timetable``'s schedule, and when ``assets`` are updated (the asset condition
    given as ``schedule=`` would be: an asset, ``a & b`` / ``a | b``, or a list of assets)."""

    @refused_at_validate
    def __init__(self, *, timetable: Timetable, assets: Any) -> None:
        if not isinstance(timetable, Timetable):
            raise InvalidTimetable(
                f"AssetOrTimeSchedule: timetable= takes a Timetable, not {timetable!r}"
            )
        if isinstance(timetable, AssetOrTimeSchedule):
            raise InvalidTimetable("AssetOrTimeSchedule: asset timetables cannot be nested")
        self.timetable = timetable
        self.assets = assets
        self.description = f"Triggered by assets or {timetable.description}"
        self.periodic = timetable.periodic
        self.can_be_scheduled = timetable.can_be_scheduled
        self.active_runs_limit = timetable.active_runs_limit

    def validate(self) -> None:
        super().validate()
        self.timetable.validate()

    @property
    def summary(self) -> str:
        return f"Asset or {self.timetable.summary}"

    def infer_manual_data_interval(self, *, run_after: dt.datetime) -> DataInterval:
        return self.timetable.infer_manual_data_interval(run_after=run_after)

    def next_dagrun_info(
        self, *, last_automated_data_interval: DataInterval | None, restriction: TimeRestriction
    ) -> DagRunInfo | None:
        return self.timetable.next_dagrun_info(
            last_automated_data_interval=last_automated_data_interval, restriction=restriction
        )
