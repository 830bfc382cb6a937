"""Entries as kombu writes them on the broker, and the kinds of garbage the transports refuse."""

from __future__ import annotations

import json
import uuid
from typing import Any


def envelope(body: str, content_type: str = "application/json") -> dict[str, Any]:
    """A kombu envelope around ``body`` (what a producer puts on a queue)."""
    return {
        "body": body,
        "content-encoding": "utf-8",
        "content-type": content_type,
        "headers": {},
        "properties": {
            "delivery_tag": str(uuid.uuid4()),
            "delivery_info": {"exchange": "", "routing_key": "default"},
            "delivery_mode": 2,
            "priority": 0,
        },
    }


#: (entry, how its reason starts): one of each kind of entry the transports must refuse.
GARBAGE = [
    (b"not json at all", "not JSON: "),
    (b"\xff\xfe\x00garbage", "not UTF-8 text: "),
    (b"[" * 100_000, "not JSON: "),
    (b'{"__type__": "bytes", "__value__": 5}', "not JSON: "),
    (b'["a", "list"]', "not a kombu envelope: a JSON list"),
    (b'{"body": "x"}', "not a kombu envelope: no 'properties' object"),
    (json.dumps({**envelope("x"), "headers": None}).encode(), "not a kombu envelope: no 'headers'"),
    (
        json.dumps(envelope("x", "application/x-python-serialize")).encode(),
        "content type 'application/x-python-serialize' is not accepted (JSON only)",
    ),
    (b"x" * (20 * 1024 * 1024), "too large: 20971520 bytes"),
]
