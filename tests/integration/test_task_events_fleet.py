"""What Flower sees of a real fleet: every try's task events, sent in batches (task.multi)."""

from __future__ import annotations

import base64
import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import redis

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

WARM_DAGS = Path(__file__).parent / "warm_dags"


def _events(envelope: bytes) -> list[dict[str, Any]] | dict[str, Any]:
    """What one message on Celery's event exchange holds: a batch (a list), or one event."""
    message = json.loads(envelope)
    body = message["body"]
    if message["properties"].get("body_encoding") == "base64":
        body = base64.b64decode(body)
    return json.loads(body)  # type: ignore[no-any-return]


def _each(held: list[dict[str, Any]] | dict[str, Any]) -> list[dict[str, Any]]:
    return held if isinstance(held, list) else [held]


def test_every_try_s_events_reach_a_listener_in_batches(make_fleet, redis_url: str) -> None:
    fleet = make_fleet(WARM_DAGS)
    db = redis_url.rsplit("/", 1)[1]
    listener = redis.Redis.from_url(redis_url).pubsub()
    listener.psubscribe(f"/{db}.celeryev/task.*")  # kombu's fanout channel for this database
    messages: list[bytes] = []
    stop = threading.Event()

    def listen() -> None:
        while not stop.is_set():
            message = listener.get_message(timeout=0.2)
            if message is not None and message["type"] == "pmessage":
                messages.append(message["data"])

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    fleet.start_worker()
    fleet.start_scheduler()
    fleet.trigger("warm_chain", "r1")
    assert fleet.wait_run("warm_chain", "r1") == "success"

    def kinds() -> Counter[str]:
        return Counter(event["type"] for raw in list(messages) for event in _each(_events(raw)))

    # The last batch goes out within EVENTS_FLUSH_SECONDS of the last try's end.
    wanted = {"task-received": 6, "task-started": 6, "task-succeeded": 6}
    fleet.wait_for(lambda: all(kinds()[k] >= n for k, n in wanted.items()), 30, "task events")
    stop.set()
    thread.join()
    listener.close()
    by_kind = kinds()
    assert {kind: by_kind[kind] for kind in wanted} == wanted
    # The worker's events go in batches (task.multi); task-sent is the publisher's, on its own.
    alone = [held for held in map(_events, messages) if isinstance(held, dict)]
    assert [event["type"] for event in alone if event["type"] in wanted] == []
