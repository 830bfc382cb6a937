"""``tradewind broker dead-letters``: what the transports refused, listed, as JSON, purged."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from typer.testing import Result

from broker_config.dead_letters import DeadLetter, FolderDeadLetters, RedisDeadLetters, _now
from broker_config.names import dead_letter_folder
from tests.cli.conftest import CliEnv
from tests.integration.conftest import redis_url
from tradewind.settings import reload_settings

__all__ = ["redis_url"]  # the fixture, imported for pytest

RAW = b"\xffnot json at all"


def _letter(reason: str) -> DeadLetter:
    return DeadLetter("default", reason, _now(), len(RAW), RAW)


def test_the_embedded_brokers_dead_letters_are_listed_then_purged(
    cli: Callable[..., Result], env: CliEnv
) -> None:
    store = FolderDeadLetters(dead_letter_folder(env.home / "broker"))
    store.add(_letter("not UTF-8 text: invalid start byte"))
    store.add(_letter("too large: 20971520 bytes (at most 1048576)"))

    listed = cli("broker", "dead-letters")
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert "default  16 bytes  not UTF-8 text: invalid start byte  b'\\xffnot json" in lines[0]
    assert "too large: 20971520 bytes" in lines[1]
    assert lines[2] == "found 2 dead letters"

    as_json = json.loads(cli("broker", "dead-letters", "--json").output)
    assert [base64.b64decode(record["entry"]) for record in as_json] == [RAW, RAW]
    assert as_json[0]["reason"] == "not UTF-8 text: invalid start byte"

    purged = cli("broker", "dead-letters", "--purge")
    assert purged.output.splitlines()[-1] == "purged 2 dead letters"
    assert cli("broker", "dead-letters").output.splitlines() == ["found 0 dead letters"]


@pytest.mark.integration
def test_the_dead_letters_on_redis(
    cli: Callable[..., Result], redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRADEWIND_BROKER_URL", redis_url)
    reload_settings()
    RedisDeadLetters(redis.Redis.from_url(redis_url)).add(_letter("not JSON: Expecting value"))
    listed = cli("broker", "dead-letters")
    assert listed.exit_code == 0, listed.output
    assert listed.output.splitlines()[-1] == "found 1 dead letter"
    assert "not JSON: Expecting value" in listed.output


def test_a_broker_without_dead_letters_is_one_line(
    cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TRADEWIND_BROKER_URL", "amqp://guest@localhost//")
    result = cli("broker", "dead-letters")
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "error: no dead letters on a amqp:// broker: Tradewind keeps them for redis:// and "
        "filesystem:// only"
    ]
