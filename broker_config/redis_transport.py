"""kombu's Redis transport, reusing one client object per connection pool.

kombu builds a new ``redis.Redis`` for each command it sends (``Channel._create_client``), and
redis-py rebuilds its table of ~165 response callbacks in every new client (redis/redis-py#3624):
~0.25 ms of CPU per command here, paid three times per task instance (the publish, the worker's
unacked bookkeeping, its acknowledgement) and twice on the hop between two tasks of a chain. A
client is only a front for the pool, which owns the connections (and checks the pid after a
fork), so one client per pool does the same work. The asynchronous client (the consumer's
``BRPOP``) is kombu's, cached already.

It also reads each entry its consumer pops itself (``_brpop_read``): kombu decodes it inside the
consumer loop, where an entry that is not a kombu envelope stops Celery's consumer for good. An
entry ``broker_config.dead_letters.check_entry`` refuses goes to the dead letters instead, and
the loop goes on.
"""

from __future__ import annotations

from queue import Empty
from typing import Any

from kombu.transport import TRANSPORT_ALIASES, redis
from kombu.utils.encoding import bytes_to_str

from broker_config.dead_letters import RedisDeadLetters, UndecodableEntry, check_entry, refuse


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

    def _brpop_read(self, **options: Any) -> bool:
        """kombu's read of a ``BRPOP`` reply, with the entry checked before it is delivered."""
        try:
            try:
                reply = self.client.parse_response(self.client.connection, "BRPOP", **options)
            except self.connection_errors:
                # As kombu does: the next poll reconnects.
                self.client.connection.disconnect()
                raise
            if not reply:
                raise Empty()
            key, raw = reply
            queue = bytes_to_str(key).rsplit(self.sep, 1)[0]  # type: ignore[no-untyped-call]
            self._queue_cycle.rotate(queue)
            try:
                payload = check_entry(raw)
            except UndecodableEntry as error:
                refuse(RedisDeadLetters(self._create_client()), queue, raw, error)
                raise Empty() from None  # nothing for the consumer: it polls again
            self.connection._deliver(payload, queue)
            return True
        finally:
            self._in_poll = None  # type: ignore[assignment]  # kombu's own None
            self._flush_brpop_reauth()  # type: ignore[no-untyped-call]


class Transport(redis.Transport):
    Channel = Channel


def install() -> None:
    """Make ``redis://`` and ``rediss://`` URLs use this transport in this process."""
    for scheme in ("redis", "rediss"):
        TRANSPORT_ALIASES[scheme] = f"{__name__}:Transport"
