"""Triggers over message queues, for ``AssetWatcher``s: each message is one event.

``RedisListTrigger(redis_url, list_name)`` pops a Redis list (``BLPOP``, so it waits in Redis,
not in a poll); ``MessageQueueTrigger(queue="redis+list://host:port/db/list_name")`` is the
same in the shape of Airflow's common-messaging trigger (other schemes are refused in one line).
A message is the event's payload ``{"message": text}`` (its JSON value under ``"value"`` when it
is JSON). A popped message is delivered once the event is recorded; a triggerer killed between
the two loses that one message (at most once, as a Redis list gives).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from tradewind.triggers.base import BaseEventTrigger, TriggerEvent, classpath_of


def _payload(raw: bytes | str) -> dict[str, Any]:
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    payload: dict[str, Any] = {"message": text}
    with contextlib.suppress(ValueError):
        payload["value"] = json.loads(text)
    return payload


class RedisListTrigger(BaseEventTrigger):
    """An event per message pushed on the Redis list ``list_name`` at ``redis_url``."""

    def __init__(self, redis_url: str, list_name: str, *, block_seconds: float = 1.0, **kw: Any):
        super().__init__()
        if not str(redis_url).startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(f"redis_url must be a redis:// URL, got {redis_url!r}")
        if not isinstance(list_name, str) or not list_name:
            raise ValueError(f"list_name must be a non-empty name, got {list_name!r}")
        self.redis_url = redis_url
        self.list_name = list_name
        self.block_seconds = float(block_seconds)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        kwargs = {
            "redis_url": self.redis_url,
            "list_name": self.list_name,
            "block_seconds": self.block_seconds,
        }
        return classpath_of(RedisListTrigger), kwargs

    async def run(self) -> AsyncIterator[TriggerEvent]:
        # Imported on a thread: its first import takes longer than the loop may be held.
        aioredis = await asyncio.to_thread(importlib.import_module, "redis.asyncio")
        client = aioredis.Redis.from_url(self.redis_url)
        try:
            while True:
                try:
                    popped = await client.blpop([self.list_name], timeout=self.block_seconds)
                except (OSError, aioredis.ConnectionError):
                    await asyncio.sleep(1.0)  # Redis away: wait for it, as the fleet does
                    continue
                if popped is not None:
                    yield TriggerEvent(_payload(popped[1]))
        finally:
            await client.aclose()


class MessageQueueTrigger(RedisListTrigger):
    """``MessageQueueTrigger(queue="redis+list://host:port/db/list_name")``."""

    def __init__(self, queue: str, **kwargs: Any) -> None:
        parts = urlsplit(str(queue))
        if parts.scheme != "redis+list":
            raise ValueError(
                f"MessageQueueTrigger: queue {queue!r} is not supported: "
                "use redis+list://host:port/db/list_name"
            )
        path = parts.path.strip("/").split("/")
        if len(path) != 2 or not path[0].isdigit() or not path[1]:
            raise ValueError(f"MessageQueueTrigger: queue {queue!r} needs /db/list_name")
        self.queue = queue
        super().__init__(f"redis://{parts.netloc}/{path[0]}", path[1], **kwargs)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return classpath_of(MessageQueueTrigger), {
            "queue": self.queue,
            "block_seconds": self.block_seconds,
        }
