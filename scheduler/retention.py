"""The history retention the scheduler applies by itself (``TRADEWIND_HISTORY_RETENTION_DAYS``).

What ``tradewind db clean`` deletes by hand, deleted here on a thread of its own, one bounded
batch at a time (``state.records.history``): the scheduling loop never waits on it, and a batch
holds its locks for milliseconds. Between batches it rests a scheduler interval while there is
work, a minute when there is none. Several schedulers may run it at once: a batch skips the runs
another one holds.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from dataclasses import dataclass, field

from state.core import STORE_ERRORS, is_store_outage, utcnow
from state.engine import Purgers
from state.records import CleanScope, HistoryBatch, clean_next_batch
from tradewind.log_folders import RunLogs
from tradewind.settings import Settings

log = logging.getLogger("tradewind.scheduler")

#: The rest after a batch that found nothing left: history ages by days, a minute is prompt.
IDLE_SECONDS = 60.0


@dataclass
class Retention:
    settings: Settings
    purgers: Purgers = field(default_factory=Purgers)

    def __post_init__(self) -> None:
        self._logs = RunLogs(self.settings)

    @property
    def enabled(self) -> bool:
        return self.settings.history_retention_days is not None

    def scope(self, now: dt.datetime | None = None) -> CleanScope:
        days = self.settings.history_retention_days or 0.0
        return CleanScope((now or utcnow()) - dt.timedelta(days=days))

    def apply_once(self, now: dt.datetime | None = None) -> HistoryBatch:
        """One batch of what is past the retention (and the logs of its runs)."""
        batch = clean_next_batch(self.settings.sql_url, self.scope(now), purgers=self.purgers)
        self._logs.remove(batch.runs)
        if batch.rows:
            done = ", ".join(f"{count} {table}" for table, count in batch.deleted.items())
            log.info("history retention deleted %s", done)
        return batch

    def run_forever(self, stop: threading.Event) -> None:
        """A batch at a time until ``stop``; a failure is logged and the next batch tried later."""
        while not stop.is_set():
            rest = IDLE_SECONDS
            try:
                if self.apply_once().rows:
                    rest = self.settings.scheduler_interval_seconds
            except STORE_ERRORS as error:
                if not is_store_outage(error):  # an outage is the loop's line to say
                    log.exception("history retention failed; trying again")
            except Exception:
                log.exception("history retention failed; trying again")
            stop.wait(rest)
