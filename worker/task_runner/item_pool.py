"""Running an iterable task's items ``task_concurrency`` at a time: threads, or one event loop.

Both pools take the items and a function that runs one item and says whether the rest must
stop (``fail_fast``). Items are handed out in order as workers free up; an item that raises
has already become an outcome inside that function, so anything escaping it is a bug or a
``BaseException`` (SIGTERM, cancellation) and stops the pool.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")


def run_in_threads(items: Sequence[T], run_one: Callable[[T], bool], concurrency: int) -> None:
    """Plain functions: ``concurrency`` threads take items until none is left or one stops."""
    feed: Iterator[T] = iter(items)
    feed_lock = threading.Lock()
    stop = threading.Event()
    escaped: list[BaseException] = []

    def work() -> None:
        while not stop.is_set():
            with feed_lock:
                chosen = next(feed, _END)
            if chosen is _END:
                return
            try:
                if run_one(chosen):  # type: ignore[arg-type]
                    stop.set()
            except BaseException as error:
                escaped.append(error)
                stop.set()
                return

    threads = [
        threading.Thread(target=work, name=f"item-{n}", daemon=True)
        for n in range(min(concurrency, len(items)))
    ]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    finally:
        # SIGTERM lands here, in the main thread: no item starts after it.
        stop.set()
    if escaped:
        raise escaped[0]


_END = object()


class _StopTheRest(Exception):
    """An item under ``fail_fast`` failed: the other workers are cancelled."""


def run_on_loop(
    items: Sequence[T], run_one: Callable[[T], Awaitable[bool]], concurrency: int
) -> None:
    """``async def`` functions: ``concurrency`` coroutines on one event loop.

    Under ``fail_fast`` the items still running are cancelled (their ``CancelledError`` is how
    they learn it); a SIGTERM cancels them too, as ``asyncio.run`` ends.
    """
    asyncio.run(_run_workers(items, run_one, concurrency))


async def _run_workers(
    items: Sequence[T], run_one: Callable[[T], Awaitable[bool]], concurrency: int
) -> None:
    feed = iter(items)

    async def work() -> None:
        for chosen in feed:  # one loop, one thread: a shared iterator needs no lock
            if await run_one(chosen):
                raise _StopTheRest

    workers = [asyncio.create_task(work()) for _ in range(min(concurrency, len(items)))]
    if not workers:
        return
    done, running = await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
    for worker in running:
        worker.cancel()
    await asyncio.gather(*running, return_exceptions=True)
    for worker in done:
        error = None if worker.cancelled() else worker.exception()
        if error is not None and not isinstance(error, _StopTheRest):
            raise error
