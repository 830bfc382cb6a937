"""A try's Celery message as kombu's Redis transport stores it, built without Celery's producer.

What ``celery -A worker worker`` reads from a Redis list entry (Celery's task protocol 2 inside
kombu's envelope): the headers (the task's name and id, the reprs Flower shows), the properties
(correlation id, delivery tag, delivery info, priority, the body's base64 encoding) and the body
``[args, kwargs, embed]`` as JSON. ``tests/broker_config/test_envelope.py`` compares every field
with the message kombu itself builds for the same task, so a Celery or kombu upgrade that adds a
field the worker reads fails there, not on a fleet.

The ``task-sent`` event (what Flower shows as a queued task) is built here too, as Celery's event
dispatcher would send it on Redis: a kombu envelope published on the ``celeryev`` fanout channel.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import time
import uuid
from typing import Any

from celery.utils.time import utcoffset

#: The embedded options of protocol 2: none are used (no callbacks, chains or chords).
_EMBED: dict[str, None] = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}
#: kombu's Redis channel: persistent tasks, transient events, priority 0 (the list named as
#: the queue).
_PERSISTENT, _TRANSIENT = 2, 1
_PRIORITY = 0
#: Celery's event exchange; on Redis a fanout exchange, published as ``/<db>.celeryev/<key>``.
EVENT_CHANNEL = "/{db}.celeryev/task.sent"


def origin() -> str:
    """The ``origin`` Celery gives a message sent outside a worker: ``gen<pid>@<host>``."""
    return f"gen{os.getpid()}@{socket.gethostname()}"


def _encoded(payload: str) -> str:
    return base64.b64encode(payload.encode()).decode()


def task_envelope(
    task_name: str, kwargs: dict[str, Any], queue: str, kwargsrepr: str
) -> tuple[str, dict[str, Any]]:
    """The id and the envelope of one message calling ``task_name(**kwargs)`` on ``queue``."""
    task_id = str(uuid.uuid4())
    headers: dict[str, Any] = {
        "lang": "py",
        "task": task_name,
        "id": task_id,
        "shadow": None,
        "eta": None,
        "expires": None,
        "group": None,
        "group_index": None,
        "retries": 0,
        "timelimit": [None, None],
        "root_id": task_id,
        "parent_id": None,
        "argsrepr": "()",
        "kwargsrepr": kwargsrepr,
        "origin": origin(),
        "ignore_result": True,
        "replaced_task_nesting": 0,
        "stamped_headers": None,
        "stamps": {},
    }
    body = json.dumps([[], kwargs, _EMBED])
    # No result backend: the worker never replies, so no reply queue (Celery names one anyway).
    properties: dict[str, Any] = {"correlation_id": task_id, "reply_to": "", "argsrepr": "()"}
    properties.update(kwargsrepr=kwargsrepr, delivery_mode=_PERSISTENT)
    return task_id, _envelope(body, headers, properties, exchange="", routing_key=queue)


def sent_event(
    task_id: str, task_name: str, queue: str, kwargsrepr: str, clock: int
) -> dict[str, Any]:
    """The ``task-sent`` event of a message from ``task_envelope``, in its own envelope."""
    event = {
        "hostname": origin(),
        "utcoffset": utcoffset(),
        "pid": os.getpid(),
        "clock": clock,
        "uuid": task_id,
        "root_id": task_id,
        "parent_id": None,
        "name": task_name,
        "args": "()",
        "kwargs": kwargsrepr,
        "retries": 0,
        "eta": None,
        "expires": None,
        "queue": queue,
        "exchange": "",
        "routing_key": queue,
        "timestamp": time.time(),
        "type": "task-sent",
    }
    headers = {"hostname": event["hostname"]}
    properties = {"delivery_mode": _TRANSIENT}
    return _envelope(json.dumps(event), headers, properties, "celeryev", "task.sent")


def _envelope(
    body: str, headers: dict[str, Any], properties: dict[str, Any], exchange: str, routing_key: str
) -> dict[str, Any]:
    return {
        "body": _encoded(body),
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": headers,
        "properties": {
            **properties,
            "delivery_info": {"exchange": exchange, "routing_key": routing_key},
            "priority": _PRIORITY,
            "body_encoding": "base64",
            "delivery_tag": str(uuid.uuid4()),
        },
    }
