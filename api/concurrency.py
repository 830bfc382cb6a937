"""The API server's own bound on work in flight, and the pools sized from it.

``TRADEWIND_API_MAX_CONCURRENCY`` (N) requests are worked on at once; up to 2 N more wait, each
at most ``TRADEWIND_API_QUEUE_TIMEOUT_SECONDS``; any other is answered 503 with ``Retry-After``
at once, without touching a thread or the store. From the same N: the request threads (AnyIO's
default limiter) and the store's connection pool (``state.core.set_pool_size``).

Why the pool must be sized from the bound: a request takes a pooled connection in one thread
(its first query) and keeps it across the next hops (the route's thread, then the response's
serialisation thread) until its transaction ends. Unbounded, 52 requests in flight filled
AnyIO's 40 threads with requests waiting for one of 10 connections, while the requests holding
those connections waited for a thread: nothing moved until the pool's 30 s timeout turned them
into 500s. Bounded to N, with N threads and at least N connections, every admitted request
finds its connection at once, so no thread ever waits on the pool.
"""

from __future__ import annotations

import json

import anyio
import anyio.to_thread
from starlette.types import ASGIApp, Receive, Scope, Send

from state.core import set_pool_size
from tradewind.settings import Settings

#: Requests that may wait for a slot, per slot: a burst is queued, a flood is refused.
WAITING_PER_SLOT = 2
#: What a refused client is told to wait before trying again (seconds).
RETRY_AFTER_SECONDS = 1


def size_store_pool(settings: Settings) -> None:
    """Size the store's pool for the server's bound: a connection for every admitted request.

    Call before the store's engine is first made (engines keep the size they were made with).
    """
    set_pool_size(settings.api_max_concurrency)


class ConcurrencyLimit:
    """A pure ASGI middleware admitting ``max_concurrency`` requests at once, a queue behind."""

    def __init__(self, app: ASGIApp, max_concurrency: int, queue_timeout_seconds: float) -> None:
        self.app = app
        self.max_concurrency = max_concurrency
        self.max_waiting = WAITING_PER_SLOT * max_concurrency
        self.queue_timeout_seconds = queue_timeout_seconds
        self._slots = anyio.Semaphore(max_concurrency)
        self._waiting = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not await self._admitted():
            await self._refuse(send)
            return
        try:
            self._size_threads()
            await self.app(scope, receive, send)
        finally:
            self._slots.release()

    async def _admitted(self) -> bool:
        """Take a slot, waiting in the queue if there is room in it; False: refuse."""
        try:
            self._slots.acquire_nowait()
            return True
        except anyio.WouldBlock:
            pass
        if self._waiting >= self.max_waiting:
            return False
        self._waiting += 1
        try:
            with anyio.move_on_after(self.queue_timeout_seconds):
                await self._slots.acquire()
                return True
            return False
        finally:
            self._waiting -= 1

    def _size_threads(self) -> None:
        # One thread per admitted request: a request uses one at a time. The limiter is the
        # event loop's own, so it is set from inside it (the first request), not at import.
        limiter = anyio.to_thread.current_default_thread_limiter()
        if limiter.total_tokens != self.max_concurrency:
            limiter.total_tokens = self.max_concurrency

    async def _refuse(self, send: Send) -> None:
        detail = (
            f"the API server is busy: {self.max_concurrency} requests in flight and "
            f"{self.max_waiting} waiting; retry in {RETRY_AFTER_SECONDS} s"
        )
        body = json.dumps({"detail": detail}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"retry-after", str(RETRY_AFTER_SECONDS).encode()),
        ]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body})
