"""``DateTimeTrigger`` and ``TimeDeltaTrigger``: fire at a moment (the standard provider's).

Thousands wait at once in one triggerer: each is one sleeping coroutine, no thread, no poll.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

from tradewind.triggers.base import BaseTrigger, TriggerEvent, classpath_of


def _aware(moment: dt.datetime) -> dt.datetime:
    if not isinstance(moment, dt.datetime):
        raise TypeError(f"moment must be a datetime, got {type(moment).__name__}")
    if moment.tzinfo is None:
        raise ValueError(f"moment {moment.isoformat()} has no time zone: give an aware datetime")
    return moment.astimezone(dt.UTC)


class DateTimeTrigger(BaseTrigger):
    """Fire once ``moment`` (an aware datetime) has passed; the event's payload is the moment."""

    def __init__(self, moment: dt.datetime, *, end_from_trigger: bool = False, **kwargs: Any):
        super().__init__()
        self.moment = _aware(moment)
        self.end_from_trigger = bool(end_from_trigger)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        kwargs = {"moment": self.moment, "end_from_trigger": self.end_from_trigger}
        return classpath_of(DateTimeTrigger), kwargs

    async def run(self) -> AsyncIterator[TriggerEvent]:
        # One sleep to the moment, then short ones: a clock that jumped is caught up with.
        while True:
            left = (self.moment - dt.datetime.now(dt.UTC)).total_seconds()
            if left <= 0:
                break
            await asyncio.sleep(min(left, 3600.0))
        yield TriggerEvent(self.moment)


class TimeDeltaTrigger(DateTimeTrigger):
    """Fire ``delta`` after it is made (when the task defers): a ``DateTimeTrigger`` at
    now + ``delta``."""

    def __init__(self, delta: dt.timedelta, *, end_from_trigger: bool = False, **kwargs: Any):
        if not isinstance(delta, dt.timedelta):
            raise TypeError(f"delta must be a timedelta, got {type(delta).__name__}")
        super().__init__(dt.datetime.now(dt.UTC) + delta, end_from_trigger=end_from_trigger)
