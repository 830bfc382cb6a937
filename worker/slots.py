"""What a supervisor keeps from one try to the next, kept per slot: one per supervising thread.

With Celery's threads pool (the worker's default, ``worker/celery_app.py``) one process runs
``--concurrency`` supervisors at once, one per thread of the pool; with ``--pool prefork`` each
pool process runs one, on its one thread. What a supervisor keeps between tries (its fork server,
its idle warm task process, the task processes it left exiting) belongs to it alone: a fork
server's channel carries the exit reports of that supervisor's task processes, and a second
thread reading it would take them from the first. ``PerSlot`` keys such objects by thread; the
worker's shutdown, run once the pool's threads are done, takes them all.

Each method is one dict operation, which the interpreter runs whole: no lock is needed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerSlot(Generic[T]):
    """One value per supervising thread."""

    def __init__(self) -> None:
        self._by_thread: dict[int, T] = {}

    def get(self) -> T | None:
        return self._by_thread.get(threading.get_ident())

    def get_or_make(self, make: Callable[[], T]) -> T:
        """This slot's value, made (and kept) if it has none."""
        value = self._by_thread.get(threading.get_ident())
        if value is None:
            value = self._by_thread.setdefault(threading.get_ident(), make())
        return value

    def put(self, value: T) -> None:
        self._by_thread[threading.get_ident()] = value

    def take(self) -> T | None:
        """This slot's value, no longer kept."""
        return self._by_thread.pop(threading.get_ident(), None)

    def values(self) -> list[T]:
        """Every slot's value, left in place."""
        return list(self._by_thread.values())

    def take_all(self) -> list[T]:
        """Every slot's value, no longer kept (the worker stops)."""
        taken = []
        for thread in list(self._by_thread):
            value = self._by_thread.pop(thread, None)
            if value is not None:
                taken.append(value)
        return taken
