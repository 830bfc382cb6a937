"""Riding out an outage: retrying with jittered backoff, for a bounded time, logging once.

A database restart of a few seconds must cost no try (DESIGN.md §7 "Outages"). A supervisor
that cannot write its heartbeat or its end, or a claim that cannot reach the store, waits for the
store instead of failing: it retries with exponential backoff, jittered so that a fleet of
supervisors does not hammer the server in step when it comes back, and capped at one second
so that the work moves again within about a second of its return. The wait is bounded: past
``budget_seconds()`` (a little less than the zombie threshold, after which the scheduler gives
the try up anyway) the caller gets ``StoreUnavailable`` and the zombie rule decides, as it did
before. An outage is one warning line when it starts and one line when it ends, never one line
per attempt.

The bound is one number per process, set once at start (``set_budget``) from the settings; the
worker's supervisors share it (a prefork pool process inherits it).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from state.core.db import get_engine
from state.core.metrics import count_metric

log = logging.getLogger("tradewind.outage")
T = TypeVar("T")

#: With the default settings (zombie after 30 s, SIGKILL 5 s after SIGTERM).
DEFAULT_BUDGET_SECONDS = 25.0
_budget = {"seconds": DEFAULT_BUDGET_SECONDS}


def outage_budget(zombie_threshold_seconds: float, kill_grace_seconds: float) -> float:
    """How long a try may wait for the store: its task stopped before the zombie rule retries it.

    A supervisor that gives up stops its task (SIGTERM, then SIGKILL after the grace period);
    giving up a grace period before the threshold means the old task is gone before the
    scheduler can start the next try, so no try ever runs twice at once.
    """
    return max(zombie_threshold_seconds / 2, zombie_threshold_seconds - kill_grace_seconds)


def set_budget(seconds: float) -> None:
    _budget["seconds"] = seconds


def budget_seconds() -> float:
    return _budget["seconds"]


class StoreUnavailable(Exception):
    """The store stayed unavailable for longer than the budget; the zombie rule takes over."""


def is_store_outage(error: BaseException) -> bool:
    """Whether ``error`` says the database could not be reached, rather than refused the work.

    A lost or refused connection, or a server starting up or shutting down: an
    ``OperationalError`` or ``InterfaceError`` with no SQLSTATE (the driver's own: a refused
    connection, SQLite's busy file), one of class 08 (connection exception) or of a server going
    away, and any error SQLAlchemy recognised as a lost connection. Not a statement the server
    ran and refused, such as a lock timeout (55P03): that write fails now, as it did before
    (an iterable task keeps such a round for its next write).
    """
    if isinstance(error, DBAPIError) and error.connection_invalidated:
        return True
    if not isinstance(error, OperationalError | InterfaceError):
        return False
    sqlstate = getattr(error.orig, "sqlstate", None)
    return sqlstate is None or sqlstate.startswith("08") or sqlstate in _SERVER_GOING_AWAY


# admin_shutdown, crash_shutdown, cannot_connect_now (PostgreSQL's SQLSTATEs).
_SERVER_GOING_AWAY = frozenset({"57P01", "57P02", "57P03"})


@dataclass(frozen=True)
class Backoff:
    """Exponential delays with "equal jitter": half the step fixed, half drawn at random."""

    first_seconds: float = 0.1
    max_seconds: float = 1.0

    def delay(self, attempt: int, draw: Callable[[], float] = random.random) -> float:
        step = min(self.max_seconds, self.first_seconds * 2.0 ** min(attempt, 30))
        return step / 2 + draw() * step / 2


@dataclass
class OutageLog:
    """One line when a service stops answering, one when it answers again."""

    what: str
    logger: logging.Logger = log
    service: str = "the SQL store"
    since: float | None = None

    def failed(self, error: BaseException, now: float) -> None:
        if self.since is None:
            self.since = now
            self.logger.warning(
                "%s: %s is unavailable, retrying: %s", self.what, self.service, one_line(error)
            )

    def recovered(self, now: float) -> None:
        if self.since is not None:
            self.logger.warning(
                "%s: %s is back after %.1fs", self.what, self.service, now - self.since
            )
            service = service_label(self.service)
            count_metric("outage_rides", service=service, outcome="recovered")
            count_metric("outage_seconds", now - self.since, service=service)
            self.since = None

    def down_for(self, now: float) -> float:
        return 0.0 if self.since is None else now - self.since


def service_label(service: str) -> str:
    """The ``service`` label of the outage metrics: ``broker`` or ``store``."""
    return "broker" if "broker" in service else "store"


def one_line(error: BaseException) -> str:
    """The first line of an error (a psycopg error goes on with hints and the SQL)."""
    text = str(error).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(error).__name__}: {first}"


#: What a failed statement raises: every DBAPI error; ``is_store_outage`` tells the outages apart.
STORE_ERRORS: tuple[type[Exception], ...] = (DBAPIError,)


@dataclass
class Retry:
    """How one call rides out an outage (see ``ride_out``)."""

    what: str
    errors: tuple[type[Exception], ...] = STORE_ERRORS
    is_outage: Callable[[BaseException], bool] = is_store_outage
    service: str = "the SQL store"
    # Called between attempts until it passes: a cheap check that the service is back, so the
    # real work (and its own error logging) runs again only then.
    probe: Callable[[], object] | None = None
    backoff: Backoff = Backoff()
    budget: float | None = None
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic


def ride_out(action: Callable[[], T], retry: Retry) -> T:
    """``action()``, retried through an outage; ``StoreUnavailable`` past the budget."""
    waiting = _Waiting(retry, retry.clock())
    while True:
        try:
            result = action()
        except retry.errors as error:
            if not retry.is_outage(error):
                raise
            waiting.outage.failed(error, retry.clock())
            waiting.until_back(error)
            continue
        waiting.outage.recovered(retry.clock())
        return result


class _Waiting:
    """The backoff between the attempts of one ``ride_out``, and its bound."""

    def __init__(self, retry: Retry, start: float) -> None:
        self.retry = retry
        self.start = start
        self.budget = budget_seconds() if retry.budget is None else retry.budget
        self.outage = OutageLog(retry.what, service=retry.service)
        self.attempt = 0

    def until_back(self, error: Exception) -> None:
        """Sleep with backoff (and, with a probe, until it passes); past the bound, give up."""
        retry = self.retry
        while True:
            delay = retry.backoff.delay(self.attempt)
            self.attempt += 1
            if retry.clock() + delay > self.start + self.budget:
                waited = retry.clock() - self.start
                service = service_label(retry.service)
                count_metric("outage_rides", service=service, outcome="gave_up")
                count_metric("outage_seconds", waited, service=service)
                raise StoreUnavailable(
                    f"{retry.what}: {retry.service} still unavailable after {waited:.1f}s (the "
                    f"bound is {self.budget:g}s): {one_line(error)}"
                ) from error
            retry.sleep(delay)
            if retry.probe is None:
                return
            try:
                retry.probe()
            except retry.errors as failed:
                if not retry.is_outage(failed):
                    raise
                error = failed
                continue
            return


def store_probe(url: str) -> Callable[[], object]:
    """A ``Retry.probe`` for the SQL store at ``url``: one ``SELECT 1`` on a pooled connection."""

    def probe() -> object:
        with get_engine(url).connect() as connection:
            return connection.exec_driver_sql("SELECT 1").scalar()

    return probe


@dataclass
class BeatSchedule:
    """When a periodic fenced write (a heartbeat) is due, through an outage; when to give up.

    Due every ``interval_seconds`` while it succeeds; after a failure sooner, with backoff (never
    later than the interval), so the first beat after the store's return comes within a second
    of it. Failing for longer than ``budget_seconds()`` since the last success, the try is past
    saving: ``failed`` returns None and the supervisor stops its task before the zombie rule
    starts the next try.
    """

    interval_seconds: float
    outage: OutageLog
    last_success: float
    backoff: Backoff = Backoff()
    attempt: int = 0

    def succeeded(self, now: float) -> float:
        self.last_success = now
        self.attempt = 0
        self.outage.recovered(now)
        return now + self.interval_seconds

    def failed(self, error: BaseException, now: float) -> float | None:
        self.outage.failed(error, now)
        if now - self.last_success > budget_seconds():
            return None
        delay = min(self.interval_seconds, self.backoff.delay(self.attempt))
        self.attempt += 1
        return now + delay
