"""Work the supervisor's loop hands to a thread: reading and writing XCom rows.

A 64 MiB value takes the database over a second to write (PostgreSQL compresses it) and the
supervisor as long again to serialize: done in the loop, the try's heartbeats wait for it and a
healthy task starts to look dead. ``Background`` runs such work on one thread, in the order it
was submitted, and hands each outcome back to the loop through a pipe the selector watches; the
``then`` callbacks run in the loop, one by one, in submission order.

The thread exists only while a try has work for it: ``close`` stops it when the try ends (a
supervisor forking its task process itself, in tests, must hold no other thread then). Without
a selector (handlers called directly), work runs inline.
"""

from __future__ import annotations

import os
import selectors
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from state.core import Retry, ride_out

# Calls the submitted work's result (or raises what the work raised).
Outcome = Callable[[], Any]


class Background:
    """One thread for a try's slow I/O; results come back to the selector loop in order."""

    def __init__(self) -> None:
        self._selector: selectors.BaseSelector | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._wake: tuple[int, int] | None = None
        self._waiting: deque[tuple[Future[Any], Callable[[Outcome], None]]] = deque()

    def register(self, selector: selectors.BaseSelector) -> None:
        self._selector = selector

    @property
    def pending(self) -> bool:
        return bool(self._waiting)

    def submit(self, work: Callable[[], Any], then: Callable[[Outcome], None]) -> None:
        """Run ``work`` on the thread; ``then`` takes its outcome in the loop, in order."""
        # Each piece of work is one transaction: retried as a whole through an outage.
        retry = Retry("a task's XCom read or write")
        if self._selector is None:
            # The work is its own outcome: called there, it returns or raises.
            then(lambda: ride_out(work, retry))
            return
        future = self._start().submit(ride_out, work, retry)
        self._waiting.append((future, then))
        future.add_done_callback(self._signal)

    def close(self) -> None:
        """Stop the thread (waiting for its work) and release the pipe; safe to call twice."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        if self._wake is not None:
            if self._selector is not None:
                self._selector.unregister(self._wake[0])
            for fd in self._wake:
                os.close(fd)
            self._wake = None

    def _start(self) -> ThreadPoolExecutor:
        if self._executor is None:
            assert self._selector is not None
            self._wake = os.pipe()
            os.set_blocking(self._wake[1], False)
            self._selector.register(self._wake[0], selectors.EVENT_READ, self._on_done)
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="tradewind-io")
        return self._executor

    def _signal(self, _future: Future[Any]) -> None:
        if self._wake is not None:
            os.write(self._wake[1], b"\0")  # one byte per result: the pipe cannot fill up

    def _on_done(self, _selector: selectors.BaseSelector, fileobj: object) -> None:
        os.read(fileobj, 4096)  # type: ignore[arg-type]
        while self._waiting and self._waiting[0][0].done():
            future, then = self._waiting.popleft()
            then(future.result)
