"""The Redis transport: one client per connection pool, messages as kombu's own, on a real Redis."""

from __future__ import annotations

from collections.abc import Iterator

import kombu
import pytest
import redis

from broker_config import redis_transport
from broker_config.app import make_celery_app
from broker_config.publish import publish_many
from state.engine.scheduling import Enqueue

DATABASE = 13  # a database of its own, flushed around each test
URL = f"redis://127.0.0.1:6379/{DATABASE}"


@pytest.fixture
def connection() -> Iterator[kombu.Connection]:
    redis_transport.install()
    redis.Redis(db=DATABASE).flushdb()
    with kombu.Connection(URL) as made:
        yield made
    redis.Redis(db=DATABASE).flushdb()


def test_a_channel_keeps_one_client_until_its_pool_is_replaced(
    connection: kombu.Connection,
) -> None:
    channel = connection.default_channel
    assert isinstance(channel, redis_transport.Channel)
    first = channel._create_client()
    assert channel._create_client() is first
    channel._disconnect_pools()  # what kombu does when the connection is lost
    replaced = channel._create_client()
    assert replaced is not first and replaced.connection_pool is channel.pool


def test_messages_go_through_as_with_kombus_own_transport(connection: kombu.Connection) -> None:
    channel = connection.default_channel
    for body in ("one", "two"):
        channel._put("default", {"body": body})
    assert [channel._get("default")["body"] for _ in range(2)] == ["one", "two"]


def test_a_published_try_names_its_message_for_flower(tmp_path: object) -> None:
    app = make_celery_app(URL, tmp_path)  # type: ignore[arg-type]
    redis.Redis(db=DATABASE).flushdb()
    try:
        queued = Enqueue(7, 2, "etl", "manual__1", "load", -1, "default")
        assert publish_many(app, [queued]) == 1
        raw = redis.Redis(db=DATABASE).lpop("default")
        assert raw is not None
        headers = kombu.utils.json.loads(raw)["headers"]
        assert headers["argsrepr"] == "()"
        assert kombu.utils.json.loads(headers["kwargsrepr"])["message"]["task_id"] == "load"
    finally:
        redis.Redis(db=DATABASE).flushdb()
