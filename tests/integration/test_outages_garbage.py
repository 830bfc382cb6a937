"""No consumer lost to garbage: undecodable entries go to the dead letters, the worker goes on.

Entries are written straight onto the queue (``LPUSH`` on Redis, a message file on the embedded
broker), as no kombu producer would; then a DAG runs to success on the same worker process, and
``tradewind broker dead-letters`` shows every entry with its reason.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable

import pytest
import redis

from tests.broker_config.envelopes import envelope
from tests.integration.conftest import Fleet

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
PG_DATABASE_PREFIX = "tw_outage_garbage_"

#: Raw bytes, a JSON that is not an envelope, an envelope of an unknown content type, 20 MB.
ENTRIES = [
    (b"not json at all \xff\x00", "not UTF-8 text"),
    (b'{"task": "tradewind.execute_task_instance", "ti_id": 1}', "not a kombu envelope"),
    (json.dumps(envelope("x", "application/x-yaml")).encode(), "content type 'application/x-yaml'"),
    (b"A" * (20 * 1024 * 1024), "too large: 20971520 bytes"),
]


def _worker_ready(fleet: Fleet) -> None:
    fleet.wait_for(lambda: " ready." in fleet.log("w1"), 60, "the worker to be ready")


def _dead_letters(fleet: Fleet) -> list[dict[str, object]]:
    listed = subprocess.run(
        [sys.executable, "-m", "cli", "broker", "dead-letters", "--json"],
        env=fleet.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(listed.stdout)  # type: ignore[no-any-return]


def _check_survived(fleet: Fleet, worker: subprocess.Popen[bytes]) -> None:
    fleet.trigger("xcom_pipeline", "r1")
    assert fleet.wait_run("xcom_pipeline", "r1", timeout=90) == "success"
    assert worker.poll() is None  # the same worker process served the run
    assert "Unrecoverable error" not in fleet.log("w1")
    letters = _dead_letters(fleet)
    reasons = [str(record["reason"]) for record in letters]
    assert len(reasons) == len(ENTRIES)
    assert all(got.startswith(want) for got, (_, want) in zip(reasons, ENTRIES, strict=True))
    kept = [base64.b64decode(str(record["entry"])) for record in letters]
    assert kept[:3] == [raw for raw, _ in ENTRIES[:3]]
    assert letters[3]["size_bytes"] == 20 * 1024 * 1024
    assert fleet.log("w1").count("to the dead letters") == len(ENTRIES)  # one line each


def test_garbage_on_redis_costs_no_consumer(fleet: Fleet, redis_url: str) -> None:
    worker = fleet.start_worker("w1")
    fleet.start_scheduler()
    _worker_ready(fleet)
    client = redis.Redis.from_url(redis_url)
    for raw, _ in ENTRIES:
        client.lpush("default", raw)
    fleet.wait_for(lambda: client.llen("default") == 0, 60, "the worker to pop the garbage")
    _check_survived(fleet, worker)


def test_garbage_on_the_embedded_broker_costs_no_consumer(
    embedded_fleet: Fleet, make_queue_file: Callable[[bytes], None]
) -> None:
    worker = embedded_fleet.start_worker("w1")
    embedded_fleet.start_scheduler()
    _worker_ready(embedded_fleet)
    for raw, _ in ENTRIES:
        make_queue_file(raw)
    _check_survived(embedded_fleet, worker)


@pytest.fixture
def make_queue_file(embedded_fleet: Fleet) -> Callable[[bytes], None]:
    """Write a message file onto the embedded broker's ``default`` queue, in arrival order."""
    queue = embedded_fleet.home / "broker" / "queue"

    def make(raw: bytes) -> None:
        name = f"{time.time_ns():020d}_{uuid.uuid4()}.default.msg"
        (queue / f".{name}").write_bytes(raw)
        (queue / f".{name}").rename(queue / name)

    return make
