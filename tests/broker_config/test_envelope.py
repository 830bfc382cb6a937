"""A try published without Celery's producer carries every field of kombu's own message.

Each test publishes the same try both ways on a real Redis (Celery's ``send_task``, then the
direct ``LPUSH``) and compares the two entries field by field, and the two ``task-sent`` events:
a field kombu or Celery adds in an upgrade, and the worker then reads, fails here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kombu
import pytest
import redis
from celery import Celery
from kombu.exceptions import OperationalError

from broker_config import publish
from broker_config.app import make_celery_app
from state.engine.scheduling import Enqueue
from tests.integration.conftest import redis_url

__all__ = ["redis_url"]  # the fixture, used by name

QUEUED = Enqueue(7, 2, "etl", "manual__1", "load", 3, "gpu")
#: Fields that differ between any two messages: ids, clocks, timestamps.
PER_MESSAGE = {"id", "root_id", "correlation_id", "delivery_tag", "uuid", "clock", "timestamp"}


def without_ids(value: Any) -> Any:
    """``value`` with the per-message fields blanked, at every depth."""
    if isinstance(value, dict):
        return {k: "…" if k in PER_MESSAGE else without_ids(v) for k, v in value.items()}
    return value


def decoded(raw: bytes) -> dict[str, Any]:
    """An entry as stored, with its base64 body decoded (kombu's and ours encode alike)."""
    entry: dict[str, Any] = json.loads(raw)
    message = kombu.Connection("redis://").default_channel.message_to_python(entry)
    entry["body"] = message.decode()
    return entry


def both_ways(app: Celery, client: redis.Redis, events: redis.client.PubSub) -> list[Any]:
    """The entries (and events) of ``QUEUED`` published through Celery and directly."""
    published = []
    for send in (publish._send_many, publish._push_many):
        assert send(app, [QUEUED]) == 1
        raw = client.rpop("gpu")
        assert raw is not None and client.llen("gpu") == 0
        published.append((decoded(raw), next_event(events)))
    return published


def next_event(events: redis.client.PubSub) -> dict[str, Any] | None:
    while (message := events.get_message(timeout=5)) is not None:
        if message["type"] == "pmessage":
            return decoded(message["data"])
    return None


@pytest.fixture
def broker(redis_url: str) -> tuple[redis.Redis, redis.client.PubSub]:
    client = redis.Redis.from_url(redis_url)
    events = client.pubsub()
    # Channels are server-wide: only this database's, or another fleet's events come in too.
    database = client.connection_pool.connection_kwargs["db"]
    events.psubscribe(f"/{database}.celeryev/*")
    events.get_message(timeout=5)  # the subscription's confirmation
    return client, events


def test_the_direct_message_equals_kombus_own(broker: Any, redis_url: str, tmp_path: Path) -> None:
    (kombus, kombus_event), (ours, our_event) = both_ways(
        make_celery_app(redis_url, tmp_path), *broker
    )
    # The one intended difference: no result backend, so no queue for replies.
    assert ours["properties"].pop("reply_to") == ""
    assert kombus["properties"].pop("reply_to")
    assert without_ids(ours) == without_ids(kombus)
    assert ours["body"] == [[], {"message": QUEUED_MESSAGE}, kombus["body"][2]]
    headers, properties = ours["headers"], ours["properties"]
    assert headers["root_id"] == headers["id"] == properties["correlation_id"]
    assert properties["delivery_tag"] != kombus["properties"]["delivery_tag"]
    assert our_event is not None and kombus_event is not None
    assert without_ids(our_event) == without_ids(kombus_event)
    assert our_event["body"]["uuid"] == headers["id"]


QUEUED_MESSAGE = {
    "ti_id": 7,
    "try_number": 2,
    "dag_id": "etl",
    "run_id": "manual__1",
    "task_id": "load",
    "map_index": 3,
}


def test_without_sent_events_only_the_message_goes_out(
    broker: Any, redis_url: str, tmp_path: Path
) -> None:
    client, events = broker
    app = make_celery_app(redis_url, tmp_path, sent_events=False)
    assert publish.publish_many(app, [QUEUED, QUEUED]) == 2
    assert client.llen("gpu") == 2
    assert next_event(events) is None


def test_an_unreachable_redis_is_the_error_the_callers_ride_out(tmp_path: Path) -> None:
    app = make_celery_app("redis://127.0.0.1:1/0", tmp_path)
    with pytest.raises(OperationalError, match=r"^publishing 1 tries to Redis: "):
        publish.publish_many(app, [QUEUED])
