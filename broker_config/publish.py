"""Publishing task-instance messages, after the commit that queued them.

On Redis a try's message is built here (``broker_config.envelope``) and pushed with redis-py, one
pipeline per batch: Celery's ``send_task`` spent a quarter of a supervisor's time on its layers
around one ``LPUSH`` (issue 16, docs/benchmarks.md). The ``task-sent`` event goes in the same
pipeline when ``task_send_sent_event`` is on (``TRADEWIND_TASK_SENT_EVENTS``). The embedded
broker's messages go through Celery's producer as before.

A lost Redis raises kombu's ``OperationalError``, as Celery's producer did: the callers ride out
a broker outage on that one exception.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import Any

import redis
from celery import Celery
from kombu.exceptions import OperationalError

from broker_config.envelope import EVENT_CHANNEL, sent_event, task_envelope
from broker_config.message import QueuedTry, message_of, payload_of
from broker_config.names import EXECUTE_TASK_NAME, queue_name


def publish_many(app: Celery, tries: Iterable[QueuedTry], handed_over: bool = False) -> int:
    """Send one message per try on its queue; returns the count. ``handed_over``: the tries
    were queued by an upstream's end (``TaskInstanceMessage.handed_over``)."""
    if app.conf.broker_url.startswith(("redis://", "rediss://")):
        return _push_many(app, tries, handed_over)
    return _send_many(app, tries, handed_over)


def _push_many(app: Celery, tries: Iterable[QueuedTry], handed_over: bool = False) -> int:
    """One pipeline of ``LPUSH`` (and ``PUBLISH`` of the ``task-sent`` events) for the batch."""
    client = _client(app.conf.broker_url)
    events = bool(app.conf.task_send_sent_event)
    pipe = client.pipeline(transaction=False)
    sent = 0
    for queued in tries:
        queue = queue_name(queued.queue)
        kwargs = {"message": payload_of(message_of(queued, handed_over))}
        kwargsrepr = json.dumps(kwargs)
        task_id, envelope = task_envelope(EXECUTE_TASK_NAME, kwargs, queue, kwargsrepr)
        pipe.lpush(queue, json.dumps(envelope))
        if events:
            event = sent_event(task_id, EXECUTE_TASK_NAME, queue, kwargsrepr, app.clock.forward())
            pipe.publish(_event_channel(client), json.dumps(event))
        sent += 1
    if sent:
        try:
            pipe.execute()
        except (redis.ConnectionError, redis.TimeoutError) as error:
            raise OperationalError(f"publishing {sent} tries to Redis: {error}") from error
    return sent


@functools.cache
def _client(broker_url: str) -> Any:
    # One client per broker URL and process; its pool checks the pid, so a forked pool
    # process opens its own connections instead of sharing its parent's.
    return redis.Redis.from_url(broker_url, socket_connect_timeout=10, socket_timeout=30)


def _event_channel(client: Any) -> str:
    return EVENT_CHANNEL.format(db=client.connection_pool.connection_kwargs.get("db", 0))


def _send_many(app: Celery, tries: Iterable[QueuedTry], handed_over: bool = False) -> int:
    """Through Celery's producer, over one connection (the embedded broker)."""
    sent = 0
    with app.producer_or_acquire() as producer:
        for queued in tries:
            kwargs = {"message": payload_of(message_of(queued, handed_over))}
            app.send_task(
                EXECUTE_TASK_NAME,
                kwargs=kwargs,
                queue=queue_name(queued.queue),
                producer=producer,
                ignore_result=True,
                # What Flower shows; Celery's own (reprlib over the kwargs) costs ~0.3 ms.
                argsrepr="()",
                kwargsrepr=json.dumps(kwargs),
            )
            sent += 1
    return sent
