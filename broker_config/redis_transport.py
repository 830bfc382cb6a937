"""kombu's Redis transport, reusing one client object per connection pool.

kombu builds a new ``redis.Redis`` for each command it sends (``Channel._create_client``), and
redis-py rebuilds its table of ~165 response callbacks in every new client (redis/redis-py#3624):
~0.25 ms of CPU per command here, paid three times per task instance (the publish, the worker's
unacked bookkeeping, its acknowledgement) and twice on the hop between two tasks of a chain. A
client is only a front for the pool, which owns the connections (and checks the pid after a
fork), so one client per pool does the same work. The asynchronous client (the consumer's
``BRPOP``) is kombu's, cached already.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import TRANSPORT_ALIASES, redis


class Channel(redis.Channel):
    _sync_client: Any = None

    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:
            return super()._create_client(asynchronous=True)  # type: ignore[no-untyped-call]
        client = self._sync_client
        # A pool kombu dropped (a lost connection) is replaced: so is its client.
        if client is None or client.connection_pool is not self.pool:
            client = self._sync_client = super()._create_client()  # type: ignore[no-untyped-call]
        return client


class Transport(redis.Transport):
    Channel = Channel


def install() -> None:
    """Make ``redis://`` and ``rediss://`` URLs use this transport in this process."""
    for scheme in ("redis", "rediss"):
        TRANSPORT_ALIASES[scheme] = f"{__name__}:Transport"
