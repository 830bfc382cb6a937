"""Heartbeats for the tries still starting, before their supervisor's loop beats for them.

Between the claim and the first turn of the supervisor's loop a try loads its DAG file and
waits for a task process: a cold fork server imports the authoring API, a DAG file imports what
it needs. That is milliseconds as a rule, and seconds for a heavy DAG file or on a busy machine;
past the zombie threshold without a heartbeat, the scheduler would fail a try that is about to
run. One thread per process beats for each try that has been starting for a heartbeat interval
or more; a try that starts quickly costs two dictionary writes.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy.exc import SQLAlchemyError

from state.core import Fence, TryFenced
from state.engine import beat

log = logging.getLogger(__name__)


@dataclass
class _Starting:
    url: str
    fence: Fence
    interval: float
    due: float


class StartBeats:
    """The tries of this process that are starting, and the thread that beats for them."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._starting: dict[int, _Starting] = {}
        self._keys = itertools.count()
        self._thread: threading.Thread | None = None
        self._wake: float | None = None  # when the waiting thread wakes (None: not waiting)
        # With no try starting, the thread still wakes once an interval: a try that begins
        # then is due after the next wake, so registering it needs no wake-up of the thread.
        self._tick = 1.0
        self._pid = os.getpid()

    @contextmanager
    def starting(self, url: str, fence: Fence, interval: float) -> Iterator[None]:
        """Beat for ``fence`` every ``interval`` seconds while the block runs."""
        key = next(self._keys)
        entry = _Starting(url, fence, interval, time.monotonic() + interval)
        with self._changed:
            self._make_sure_it_runs()
            self._starting[key] = entry
            self._tick = interval
            if self._wake is None or entry.due < self._wake:  # else it wakes in time by itself
                self._changed.notify()
        try:
            yield
        finally:
            with self._changed:
                self._starting.pop(key, None)

    def _make_sure_it_runs(self) -> None:
        if self._pid != os.getpid():  # a forked pool process: the parent's thread is not here
            self._pid, self._thread = os.getpid(), None
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="start-beats", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._changed:
                due = [(key, e) for key, e in self._starting.items() if e.due <= time.monotonic()]
                if not due:
                    idle = time.monotonic() + self._tick
                    self._wake = min((e.due for e in self._starting.values()), default=idle)
                    self._changed.wait(self._wake - time.monotonic())
                    self._wake = None
                    continue
            for key, entry in due:  # outside the lock: a start that ends must not wait for SQL
                entry.due = time.monotonic() + entry.interval
                if not self._beat(entry):
                    with self._changed:
                        self._starting.pop(key, None)

    @staticmethod
    def _beat(entry: _Starting) -> bool:
        """One fenced heartbeat; False once the try is no longer this one's to start."""
        try:
            beat(entry.url, entry.fence)
        except TryFenced:
            return False  # the supervisor learns it at its own first beat, and stops the try
        except SQLAlchemyError as error:
            log.warning(
                "heartbeat of starting task instance %s failed: %s", entry.fence.ti_id, error
            )
        return True


#: The one of this process.
START_BEATS = StartBeats()
