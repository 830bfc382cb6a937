"""Waking the schedulers when a run is created (PostgreSQL's LISTEN and NOTIFY).

A scheduler passes over the active runs once per ``TRADEWIND_SCHEDULER_INTERVAL_SECONDS``: a run
triggered just after a pass waited for the next one before its first tasks were queued (0.5 s
on average at the default 1 s, measured up to 1.2 s). ``create_run`` notifies a channel inside
the run's own transaction, so the notification goes out when the run is committed, and never for
a run rolled back; a scheduler listening on the channel starts its next pass at once.

On SQLite, and while the listening connection is down (an outage of the store), a scheduler
waits its whole interval as before: a notification only shortens a wait, and the loop stays what
guarantees progress.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from sqlalchemy import exc
from sqlalchemy.orm import Session

from state.core import get_engine, statements_for, statements_of

log = logging.getLogger(__name__)

CHANNEL = "tradewind_run_created"
#: How often a wait looks at its stop event (a scheduler stopping waits at most this long).
STOP_CHECK_SECONDS = 0.2
#: After the listening connection was lost, how long before it is opened again.
RELISTEN_SECONDS = 5.0


def notify_run_created(session: Session) -> None:
    """Wake the listening schedulers once ``session``'s transaction commits (PostgreSQL)."""
    statements_of(session).notify_run_created(session, CHANNEL)


def _connection_lost() -> type[Exception]:
    """psycopg's error for a connection that failed or went away."""
    import psycopg  # the PostgreSQL extra's driver: only a PostgreSQL store gets here

    return psycopg.OperationalError


class RunWakeups:
    """A scheduler's wait between two passes, cut short when a run is created."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._listening: Any = None  # the pool's connection, kept for LISTEN alone
        self._next_listen = 0.0

    def wait(self, seconds: float, stop: threading.Event) -> bool:
        """Wait up to ``seconds`` or until ``stop`` is set; True if a run was created."""
        deadline = time.monotonic() + seconds
        driver = self.listen()
        while not stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if driver is None:
                stop.wait(left)
                return False
            heard = self._heard(driver, min(left, STOP_CHECK_SECONDS))
            if heard is None:
                driver = None  # lost: wait out the rest
            elif heard:
                return True
        return False

    def close(self) -> None:
        if self._listening is not None:
            # Not back into the pool: it would go on listening for whoever takes it next.
            self._listening.invalidate()
            self._listening = None

    def listen(self) -> Any:
        """The driver's connection listening on ``CHANNEL``, or None (SQLite, or store away).

        Called before a scheduler's first pass too: a run created from then on is heard of
        (the server keeps what was notified until the connection reads it)."""
        if self._listening is not None:
            return self._listening.driver_connection
        if not statements_for(self.url).wakes_schedulers or time.monotonic() < self._next_listen:
            return None
        try:
            connection = get_engine(self.url).raw_connection()
        except (exc.SQLAlchemyError, _connection_lost()) as error:  # the store is away
            self._lost(error)
            return None
        driver: Any = connection.driver_connection  # psycopg's own connection
        try:
            driver.autocommit = True
            driver.execute(f"LISTEN {CHANNEL}")
        except _connection_lost() as error:  # a pooled connection the server dropped
            connection.invalidate()
            self._lost(error)
            return None
        self._listening = connection
        return driver

    def _heard(self, driver: Any, seconds: float) -> bool | None:
        """Whether a run was created within ``seconds``; None if the connection was lost."""
        try:
            heard = any(True for _ in driver.notifies(timeout=seconds, stop_after=1))
            # Runs created together wake one pass, not one pass each.
            while heard and any(True for _ in driver.notifies(timeout=0, stop_after=1)):
                pass
        except _connection_lost() as error:
            self._lost(error)
            self.close()
            return None
        return heard

    def _lost(self, error: Exception) -> None:
        log.info("not listening for new runs for %gs: %s", RELISTEN_SECONDS, error)
        self._next_listen = time.monotonic() + RELISTEN_SECONDS
