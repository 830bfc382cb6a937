"""A real ``tradewind api-server`` on PostgreSQL under load: many requests in flight, and sign-in
floods.

Before the bound (``api/concurrency.py``), 52 requests in flight got 17 answers in 15 s and 37
500s after 30 s (the request threads and the store's pool deadlocked), and 200 grid requests
got none; 60 bad sign-ins at once made the health check take 20-33 s. Now every request is
served or refused with 503 and ``Retry-After``, never a 500; sign-ins past the limit are 429.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx2 as httpx
import pytest

from tests import aio
from tests.integration.conftest import Fleet, _answers, _free_port

DAGS = Path(__file__).parent / "api_dags"
PASSWORD = "s3cret-for-the-load-test"

pytestmark = pytest.mark.integration


def _serve(fleet: Fleet) -> str:
    tradewind = [sys.executable, "-m", "cli"]
    create = [*tradewind, "users", "create", "--username", "admin", "--password", PASSWORD]
    subprocess.run([*create, "--role", "admin"], env=fleet.env, check=True, timeout=60)
    for number in range(5):  # the grid then has runs to draw
        fleet.trigger("greeting", f"run-{number}", conf={"name": f"n{number}"})
    port = _free_port()
    fleet.start("api", [*tradewind, "api-server", "--host", "127.0.0.1", "--port", str(port)])
    base = f"http://127.0.0.1:{port}"
    fleet.wait_for(lambda: _answers(f"{base}/api/v2/monitor/health"), 60, "the API server")
    return base


@pytest.fixture
def serve(make_fleet: Callable[..., Fleet]) -> Iterator[Callable[..., str]]:
    """Start an API server with settings overridden by keyword; its base URL."""

    def start(**env: str) -> str:
        return _serve(make_fleet(DAGS, **env))

    yield start


def _client() -> httpx.AsyncClient:
    # One connection per request: every request is in flight at once, none waits client-side.
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
    return httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(180))


async def _signed_in(base: str) -> tuple[dict[str, str], dict[str, str]]:
    """A bearer header from ``/auth/token`` and the cookies of a browser signed in by form."""
    async with _client() as client:
        reply = await client.post(
            f"{base}/auth/token", json={"username": "admin", "password": PASSWORD}
        )
        assert reply.status_code == 201, reply.text
        bearer = {"Authorization": f"Bearer {reply.json()['access_token']}"}
        page = (await client.get(f"{base}/auth/login")).text
        token = re.search(r'name="csrf_token" value="([^"]+)"', page)
        assert token, page
        form = {"username": "admin", "password": PASSWORD, "csrf_token": token.group(1)}
        signed = await client.post(f"{base}/auth/login", data=form)
        assert signed.status_code == 303, signed.text
        return bearer, dict(client.cookies)


async def _all_at_once(base: str, paths: list[str]) -> list[httpx.Response]:
    bearer, cookies = await _signed_in(base)
    async with _client() as client:
        client.cookies.update(cookies)
        sent = [client.get(f"{base}{path}", headers=bearer) for path in paths]
        return list(await asyncio.gather(*sent))


def _served_or_refused(replies: list[httpx.Response]) -> Counter[int]:
    """The replies' codes; each is 200, or 503 saying when to retry."""
    codes = Counter(reply.status_code for reply in replies)
    assert set(codes) <= {200, 503}, codes
    for reply in replies:
        if reply.status_code == 503:
            assert int(reply.headers["retry-after"]) >= 1
            assert "busy" in reply.json()["detail"]
    return codes


@pytest.mark.timeout(300)
def test_120_requests_in_flight_are_served_or_refused_never_a_500(
    serve: Callable[..., str],
) -> None:
    # The default bound (32, 64 more waiting); the wait made long so a loaded machine serves
    # every queued request rather than timing some out.
    base = serve(TRADEWIND_API_QUEUE_TIMEOUT_SECONDS="120")
    paths = ["/dags/greeting", "/api/v2/dags", "/api/v2/dags/greeting/dagRuns"] * 40
    codes = _served_or_refused(aio.run(_all_at_once(base, paths)))
    assert codes[200] >= 60, codes


@pytest.mark.timeout(300)
def test_200_grid_pages_at_once_are_answered_past_a_small_bound(
    serve: Callable[..., str],
) -> None:
    base = serve(TRADEWIND_API_MAX_CONCURRENCY="4", TRADEWIND_API_QUEUE_TIMEOUT_SECONDS="120")
    codes = _served_or_refused(aio.run(_all_at_once(base, ["/dags/greeting"] * 200)))
    assert codes[200] >= 4 + 8, codes  # the bound and its queue, at least
    assert codes[503] > 0, codes  # 200 at once cannot all fit in 12
    page = aio.run(_all_at_once(base, ["/dags/greeting"]))[0]
    assert page.status_code == 200 and "greeting" in page.text  # and it serves on


async def _flood_and_probe(base: str, attempts: int) -> tuple[list[httpx.Response], float, float]:
    """``attempts`` bad sign-ins at once, and a health check sent among them.

    Returns the sign-ins' replies, and how long after the flood began the health check was
    answered and the last sign-in was.
    """
    async with _client() as client:
        began = time.monotonic()
        body = {"username": "admin", "password": "a wrong guess"}
        flood = [client.post(f"{base}/auth/token", json=body) for _ in range(attempts)]
        logins = asyncio.ensure_future(asyncio.gather(*flood))
        await asyncio.sleep(0)
        health = await client.get(f"{base}/api/v2/monitor/health")
        health_at = time.monotonic() - began
        assert health.status_code == 200, health.text
        replies = list(await logins)
        return replies, health_at, time.monotonic() - began


@pytest.mark.timeout(300)
def test_a_flood_of_bad_sign_ins_is_throttled_and_health_still_answers(
    serve: Callable[..., str],
) -> None:
    base = serve(TRADEWIND_API_LOGIN_MAX_FAILURES="5")
    replies, health_at, _ = aio.run(_flood_and_probe(base, 60))
    codes = Counter(reply.status_code for reply in replies)
    assert set(codes) == {401, 429}, codes
    assert codes[401] <= 5, codes  # only the first five were checked at all
    throttled = next(reply for reply in replies if reply.status_code == 429)
    assert 1 <= int(throttled.headers["retry-after"]) <= 300
    assert "too many failed sign-ins" in throttled.json()["detail"]
    assert health_at < 30, health_at  # it was 20-33 s; now it waits for no hash
    # The right password is refused too while the user is throttled: guessing cannot go on.
    right = httpx.post(f"{base}/auth/token", json={"username": "admin", "password": PASSWORD})
    assert right.status_code == 429
