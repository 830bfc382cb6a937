"""The bound on requests in flight: a queue behind it, 503 with ``Retry-After`` past both.

The middleware runs for real around a small ASGI app that holds each request until the test
lets it go, so what is in flight, waiting and refused is known exactly. The sizes derived from
the bound are checked on a real app and the store's engine.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import anyio
import anyio.to_thread
import httpx2 as httpx
from fastapi.testclient import TestClient
from starlette.types import Receive, Scope, Send

from api import create_app
from api.concurrency import ConcurrencyLimit, size_store_pool
from state.core import db
from tests import aio
from tests.state.harness import Home


class Held:
    """An ASGI app answering 200 once ``release`` is set; counts the requests it holds."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.holding = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.holding += 1
        await self.release.wait()
        self.holding -= 1
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"done"})


async def _until(condition: object, deadline_seconds: float = 30) -> None:
    deadline = anyio.current_time() + deadline_seconds
    while not condition():  # type: ignore[operator]
        assert anyio.current_time() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def _burst(slots: int, requests: int, queue_timeout_seconds: float) -> Counter[int]:
    inner = Held()
    app = ConcurrencyLimit(inner, slots, queue_timeout_seconds)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://t") as client:
        sent = [asyncio.ensure_future(client.get("/")) for _ in range(requests)]
        refused = slots * 3  # what the bound and its queue take; the rest is refused at once
        await _until(lambda: sum(task.done() for task in sent) == requests - refused)
        assert inner.holding == slots
        inner.release.set()
        replies = await asyncio.gather(*sent)
    for reply in replies:
        if reply.status_code == 503:
            assert reply.headers["retry-after"] == "1"
            assert "busy" in reply.json()["detail"]
    return Counter(reply.status_code for reply in replies)


def test_past_the_bound_and_its_queue_requests_are_refused_at_once() -> None:
    codes = aio.run(_burst(slots=2, requests=20, queue_timeout_seconds=60))
    assert codes == {200: 6, 503: 14}


def test_a_request_waiting_longer_than_the_queue_allows_is_refused() -> None:
    async def waits_too_long() -> tuple[int, int]:
        inner = Held()
        app = ConcurrencyLimit(inner, 1, queue_timeout_seconds=0.2)
        transport = httpx.ASGITransport(app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            first = asyncio.ensure_future(client.get("/"))
            await _until(lambda: inner.holding == 1)
            second = await client.get("/")  # waits 0.2 s for the one slot, then is refused
            inner.release.set()
            return (await first).status_code, second.status_code

    assert aio.run(waits_too_long()) == (200, 503)


def test_the_request_threads_are_sized_from_the_bound(home: Home, monkeypatch) -> None:
    monkeypatch.setattr(home.settings, "api_max_concurrency", 7)
    app = create_app(home.settings)

    @app.get("/threads")
    async def threads() -> int:
        return int(anyio.to_thread.current_default_thread_limiter().total_tokens)

    with TestClient(app) as client:
        assert client.get("/threads").json() == 7


def test_the_store_pool_has_a_connection_for_every_request_in_flight(
    home: Home, monkeypatch
) -> None:
    monkeypatch.setattr(home.settings, "api_max_concurrency", 48)
    monkeypatch.setitem(db._POOL, "size", 5)
    monkeypatch.setitem(db._POOL, "overflow", 5)
    size_store_pool(home.settings)
    assert db._POOL["size"] >= 48
