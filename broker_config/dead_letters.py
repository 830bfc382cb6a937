"""Dead letters: broker entries a transport could not decode, kept as received with the reason.

kombu decodes an entry inside its consumer loop: an entry that is not JSON, or JSON that is not a
kombu envelope, raises there, and Celery stops consuming for good (its worker stays alive and
idle: measured on Redis with one ``LPUSH default 'not json at all'``). Tradewind's transports
check each entry with ``check_entry`` before kombu sees it; one that fails goes to the broker's
dead letters (a Redis list, or a folder for the embedded broker, both named in
``broker_config.names``) with one log line, and the consumer goes on. ``tradewind broker
dead-letters`` lists them.

A Tradewind message is a few hundred bytes: an entry over ``MAX_ENTRY_BYTES`` is refused
unread, and only its first ``MAX_ENTRY_BYTES`` are kept. At most ``MAX_DEAD_LETTERS`` are kept on
Redis (the oldest go first), so a flood of garbage cannot fill the broker's memory.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import functools
import json
import logging
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import redis
from kombu.utils.json import loads

from broker_config.names import DEAD_LETTERS_KEY, dead_letter_folder

log = logging.getLogger("tradewind.broker")

MAX_ENTRY_BYTES = 1024 * 1024
MAX_DEAD_LETTERS = 1000
#: Tradewind sends JSON only (``accept_content``); kombu could not even decode another type.
ACCEPTED_CONTENT_TYPES = ("application/json",)
_BODY_ENCODINGS = (None, "base64")


class UndecodableEntry(ValueError):
    """A broker entry kombu could not turn into a message; the text says why, in one line."""


@dataclass(frozen=True)
class DeadLetter:
    """One refused entry: where it came from, why, when, and its bytes as received."""

    queue: str
    reason: str
    at: dt.datetime
    size_bytes: int
    entry: bytes  # the first MAX_ENTRY_BYTES of it

    def to_json(self) -> dict[str, Any]:
        fields = dataclasses.asdict(self)
        fields["at"] = self.at.isoformat()
        fields["entry"] = base64.b64encode(self.entry).decode()
        return fields

    @classmethod
    def from_json(cls, fields: Mapping[str, Any]) -> DeadLetter:
        return cls(
            queue=str(fields["queue"]),
            reason=str(fields["reason"]),
            at=dt.datetime.fromisoformat(fields["at"]),
            size_bytes=int(fields["size_bytes"]),
            entry=base64.b64decode(fields["entry"]),
        )

    def preview(self, limit: int = 60) -> str:
        """The entry's start, printable whatever its bytes are."""
        shown = repr(self.entry[:limit])
        return shown + ("..." if self.size_bytes > limit else "")


def check_entry(raw: bytes) -> dict[str, Any]:
    """The kombu envelope ``raw`` holds, or ``UndecodableEntry`` naming what is wrong."""
    if len(raw) > MAX_ENTRY_BYTES:
        raise UndecodableEntry(f"too large: {len(raw)} bytes (at most {MAX_ENTRY_BYTES})")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UndecodableEntry(f"not UTF-8 text: {error}") from None
    try:
        # kombu's own JSON, as its transports decode it
        payload = loads(text)  # type: ignore[no-untyped-call]
    # What a JSON document can make kombu's decoder raise: a syntax error, a bad typed value
    # ({"__type__": "bytes", "__value__": 5}), a nesting deeper than the stack.
    except (ValueError, TypeError, AttributeError, RecursionError) as error:
        raise UndecodableEntry(f"not JSON: {error}") from None
    _check_envelope(payload)
    return payload  # type: ignore[no-any-return]


def _check_envelope(payload: Any) -> None:
    """What kombu and Celery read of an envelope before any error of theirs is survivable."""
    if not isinstance(payload, dict):
        raise UndecodableEntry(f"not a kombu envelope: a JSON {type(payload).__name__}")
    properties = payload.get("properties")
    if not isinstance(properties, dict):
        raise UndecodableEntry("not a kombu envelope: no 'properties' object")
    if not isinstance(properties.get("delivery_tag"), str):
        raise UndecodableEntry("not a kombu envelope: no 'properties.delivery_tag'")
    delivery = properties.get("delivery_info")
    if not isinstance(delivery, dict) or not {"exchange", "routing_key"} <= delivery.keys():
        raise UndecodableEntry("not a kombu envelope: no 'properties.delivery_info' routing")
    if properties.get("body_encoding") not in _BODY_ENCODINGS:
        encoding = properties.get("body_encoding")
        raise UndecodableEntry(f"not a kombu envelope: unknown body encoding {encoding!r}")
    if not isinstance(payload.get("body", ""), str):
        raise UndecodableEntry("not a kombu envelope: 'body' is not a string")
    if not isinstance(payload.get("headers"), dict):
        raise UndecodableEntry("not a kombu envelope: no 'headers' object")
    content_type = payload.get("content-type")
    if content_type not in ACCEPTED_CONTENT_TYPES:
        raise UndecodableEntry(f"content type {content_type!r} is not accepted (JSON only)")


def refuse(store: DeadLetterStore, queue: str, raw: bytes, error: UndecodableEntry) -> None:
    """Keep a refused entry with its reason, and say so in one log line."""
    letter = DeadLetter(queue, str(error), _now(), len(raw), raw[:MAX_ENTRY_BYTES])
    store.add(letter)
    log.error(
        "moved an entry of %d bytes from queue %r to the dead letters: %s",
        len(raw),
        queue,
        error,
    )


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class DeadLetterStore(Protocol):
    """Where a broker keeps its dead letters."""

    def add(self, letter: DeadLetter) -> None: ...
    def all(self) -> list[DeadLetter]: ...
    def purge(self) -> list[DeadLetter]: ...


class RedisDeadLetters:
    """A Redis list in the broker's database, newest first, at most ``MAX_DEAD_LETTERS`` long."""

    def __init__(self, client: Any, key: str = DEAD_LETTERS_KEY) -> None:
        self.client = client
        self.key = key

    def add(self, letter: DeadLetter) -> None:
        pipe = self.client.pipeline()
        pipe.lpush(self.key, json.dumps(letter.to_json()))
        pipe.ltrim(self.key, 0, MAX_DEAD_LETTERS - 1)
        pipe.execute()

    def all(self) -> list[DeadLetter]:
        return _oldest_first(self.client.lrange(self.key, 0, -1))

    def purge(self) -> list[DeadLetter]:
        """Remove every dead letter and return them (one transaction: none is lost between)."""
        pipe = self.client.pipeline(transaction=True)
        pipe.lrange(self.key, 0, -1)
        pipe.delete(self.key)
        rows, _ = pipe.execute()
        return _oldest_first(rows)


def _oldest_first(rows: list[bytes]) -> list[DeadLetter]:
    return [DeadLetter.from_json(json.loads(row)) for row in reversed(rows)]


class FolderDeadLetters:
    """One JSON file per dead letter, named by the time it was refused (the embedded broker)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def add(self, letter: DeadLetter) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        name = f"{letter.at.strftime('%Y%m%dT%H%M%S%f')}_{uuid.uuid4().hex[:8]}.json"
        partial = self.folder / f".{name}.partial"
        partial.write_text(json.dumps(letter.to_json()))
        os.replace(partial, self.folder / name)  # a reader sees complete files only

    def all(self) -> list[DeadLetter]:
        return [DeadLetter.from_json(json.loads(path.read_text())) for path in self._files()]

    def purge(self) -> list[DeadLetter]:
        letters = []
        for path in self._files():
            letters.append(DeadLetter.from_json(json.loads(path.read_text())))
            path.unlink()
        return letters

    def count(self) -> int:
        return len(self._files())

    def _files(self) -> list[Path]:
        if not self.folder.is_dir():
            return []
        return sorted(path for path in self.folder.glob("*.json") if not path.name.startswith("."))


class NoDeadLetters(ValueError):
    """The configured broker is not one whose transport keeps dead letters."""


def dead_letters_of(broker_url: str, broker_folder: Path) -> DeadLetterStore:
    """The dead letters of the broker Tradewind is configured with."""
    if broker_url.startswith("filesystem://"):
        return FolderDeadLetters(dead_letter_folder(broker_folder))
    if broker_url.startswith(("redis://", "rediss://")):
        return RedisDeadLetters(redis.Redis.from_url(broker_url))
    scheme = broker_url.partition("://")[0]
    raise NoDeadLetters(
        f"no dead letters on a {scheme}:// broker: Tradewind keeps them for redis:// and "
        "filesystem:// only"
    )


def count_dead_letters(broker_url: str, broker_folder: Path, timeout_seconds: float) -> int:
    """How many dead letters the broker keeps, without reading them (``LLEN``; files counted).

    For ``/metrics``: a broker that does not answer within ``timeout_seconds`` raises redis's
    error rather than hold the scrape.
    """
    if broker_url.startswith(("redis://", "rediss://")):
        client = _counting_client(broker_url, timeout_seconds)
        return int(client.llen(DEAD_LETTERS_KEY))
    if broker_url.startswith("filesystem://"):
        return FolderDeadLetters(dead_letter_folder(broker_folder)).count()
    dead_letters_of(broker_url, broker_folder)  # raises NoDeadLetters, naming the scheme
    return 0


@functools.cache
def _counting_client(broker_url: str, timeout_seconds: float) -> Any:
    # One client per URL and process, kept: a scrape every 15 s need not open a connection.
    return redis.Redis.from_url(
        broker_url, socket_connect_timeout=timeout_seconds, socket_timeout=timeout_seconds
    )
