"""Entries kombu cannot decode go to the dead letters; the consumer takes the next message.

On a real Redis (a database number of this test's own): the entries are pushed raw onto the queue's
list, as anything but a kombu producer would, and consumed through kombu's own consumer loop
(``drain_events``: the ``BRPOP`` reads of broker_config.redis_transport).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kombu
import pytest
import redis

from broker_config import dead_letters, redis_transport
from broker_config.dead_letters import (
    DeadLetter,
    FolderDeadLetters,
    NoDeadLetters,
    RedisDeadLetters,
    UndecodableEntry,
    check_entry,
    dead_letters_of,
)
from broker_config.names import DEAD_LETTERS_KEY
from tests.broker_config.envelopes import GARBAGE, envelope
from tests.integration.conftest import redis_url

__all__ = ["redis_url"]  # the fixture, imported for pytest


@pytest.mark.parametrize(("raw", "reason"), GARBAGE, ids=lambda value: repr(value)[:30])
def test_each_kind_of_garbage_is_refused_with_its_reason(raw: bytes, reason: str) -> None:
    with pytest.raises(UndecodableEntry) as refused:
        check_entry(raw)
    assert str(refused.value).startswith(reason)
    assert "\n" not in str(refused.value)


def test_a_kombu_envelope_passes(redis_url: str) -> None:
    redis_transport.install()
    with kombu.Connection(redis_url) as connection:
        connection.Producer().publish(
            {"message": {"ti_id": 1}}, routing_key="default", declare=[kombu.Queue("default")]
        )
    raw = redis.Redis.from_url(redis_url).lpop("default")
    assert isinstance(raw, bytes)
    assert check_entry(raw)["content-type"] == "application/json"


@pytest.fixture
def consumer(redis_url: str) -> Iterator[tuple[kombu.Connection, list[Any]]]:
    redis_transport.install()
    received: list[Any] = []
    with kombu.Connection(redis_url) as connection:
        queue = kombu.Queue("default")
        with connection.Consumer([queue], callbacks=[lambda body, msg: received.append(body)]):
            yield connection, received


def test_the_consumer_loop_goes_on_past_garbage(
    consumer: tuple[kombu.Connection, list[Any]], redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    connection, received = consumer
    client = redis.Redis.from_url(redis_url)
    for raw, _ in GARBAGE:
        client.lpush("default", raw)
    client.lpush("default", json.dumps(envelope('{"after": "the garbage"}')))

    while not received:
        try:
            connection.drain_events(timeout=5)
        except TimeoutError:
            break  # nothing more: the assertion below says what was missing
    assert received == [{"after": "the garbage"}]
    letters = RedisDeadLetters(client).all()
    assert [
        (letter.reason[: len(reason)], letter.queue)
        for letter, (_, reason) in zip(letters, GARBAGE, strict=True)
    ] == [(reason, "default") for _, reason in GARBAGE]
    assert [letter.entry for letter in letters[:-1]] == [raw for raw, _ in GARBAGE[:-1]]
    big = letters[-1]
    assert (big.size_bytes, len(big.entry)) == (20 * 1024 * 1024, dead_letters.MAX_ENTRY_BYTES)
    moved = [r for r in caplog.records if "to the dead letters" in r.getMessage()]
    assert len(moved) == len(GARBAGE)  # one line each


def _letter(n: int) -> DeadLetter:
    return DeadLetter("default", f"reason {n}", dead_letters._now(), 1, bytes([n]))


def test_redis_keeps_the_newest_dead_letters_only(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dead_letters, "MAX_DEAD_LETTERS", 3)
    store = RedisDeadLetters(redis.Redis.from_url(redis_url))
    for n in range(5):
        store.add(_letter(n))
    assert [letter.reason for letter in store.all()] == ["reason 2", "reason 3", "reason 4"]
    assert redis.Redis.from_url(redis_url).exists(DEAD_LETTERS_KEY)


@pytest.mark.parametrize("kind", ["redis", "folder"])
def test_purge_returns_what_it_removed(kind: str, redis_url: str, tmp_path: Path) -> None:
    store = (
        RedisDeadLetters(redis.Redis.from_url(redis_url))
        if kind == "redis"
        else FolderDeadLetters(tmp_path / "dead")
    )
    letters = [_letter(1), _letter(2)]
    for letter in letters:
        store.add(letter)
    assert store.all() == letters
    assert store.purge() == letters
    assert store.all() == []


def test_the_store_follows_the_broker_url(tmp_path: Path) -> None:
    assert isinstance(dead_letters_of("filesystem://localhost/", tmp_path), FolderDeadLetters)
    assert isinstance(dead_letters_of("redis://127.0.0.1:6379/3", tmp_path), RedisDeadLetters)
    with pytest.raises(NoDeadLetters, match="no dead letters on a amqp:// broker"):
        dead_letters_of("amqp://guest@localhost//", tmp_path)
