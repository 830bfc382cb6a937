"""Sign-in throttling: too many failures for one user, or from one client, answer 429.

An attempt counts as a failure from the moment it starts until its password is found right,
so a burst of concurrent guesses is held at the limit too, not only the guesses after the
first answers. Past ``TRADEWIND_API_LOGIN_MAX_FAILURES`` within
``TRADEWIND_API_LOGIN_WINDOW_SECONDS`` (per user name, and per client address), an attempt is
refused before any password is hashed, with the seconds until the oldest failure leaves the
window. The counts live in the server's memory: each API server of a fleet counts its own,
and a restart forgets them.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass, field

#: Names and addresses remembered at most: a guesser making up names cannot grow the memory.
MAX_KEYS = 100_000


class Throttled(Exception):
    """Too many failed sign-ins: retry after ``retry_after_seconds``."""

    def __init__(self, retry_after_seconds: int) -> None:
        super().__init__(f"too many failed sign-ins: try again in {retry_after_seconds} seconds")
        self.retry_after_seconds = retry_after_seconds


@dataclass(frozen=True)
class Attempt:
    """One sign-in under way: the keys it counts against and when it started."""

    keys: tuple[str, ...]
    started: float


@dataclass
class LoginThrottle:
    """Failed sign-ins per key in a sliding window (thread-safe: sync and async routes use it)."""

    max_failures: int
    window_seconds: float
    _failures: dict[str, deque[float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def begin(self, username: str, client: str | None) -> Attempt:
        """Count an attempt against the user and the client; ``Throttled`` when over the limit."""
        keys = (f"user:{username.casefold()}", f"client:{client or 'unknown'}")
        now = time.monotonic()
        with self._lock:
            waits = [self._wait(key, now) for key in keys]
            if any(waits):
                raise Throttled(max(waits))
            self._make_room(now)
            for key in keys:
                self._failures.setdefault(key, deque()).append(now)
        return Attempt(keys, now)

    def succeeded(self, attempt: Attempt) -> None:
        """The password was right: the attempt is no failure (earlier ones still count)."""
        with self._lock:
            for key in attempt.keys:
                times = self._failures.get(key)
                if times is not None and attempt.started in times:
                    times.remove(attempt.started)

    def _wait(self, key: str, now: float) -> int:
        """Seconds until ``key`` may try again (0: it may now)."""
        times = self._failures.get(key)
        if times is None:
            return 0
        while times and times[0] <= now - self.window_seconds:
            times.popleft()
        if len(times) < self.max_failures:
            return 0
        return max(1, math.ceil(times[0] + self.window_seconds - now))

    def _make_room(self, now: float) -> None:
        if len(self._failures) < MAX_KEYS:
            return
        horizon = now - self.window_seconds
        for key in [k for k, times in self._failures.items() if not times or times[-1] <= horizon]:
            del self._failures[key]
        while len(self._failures) >= MAX_KEYS:  # all recent: forget the longest-known
            del self._failures[next(iter(self._failures))]
