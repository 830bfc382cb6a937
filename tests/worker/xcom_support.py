"""Shared by the XCom tests: a real S3 API (moto's server on a loopback port), and backends
that tests name in ``TRADEWIND_XCOM_BACKEND`` to make a helper process slow, hang, or fail.

moto runs in a process of its own: the supervisor tests fork task processes from the test
process, and a fork must not copy a server thread in the middle of a request.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from sqlalchemy import select

from state.core.db import session_scope
from state.core.models import TaskInstance, utcnow
from state.engine.liveness import find_zombies
from tradewind.settings import Settings
from worker.xcom.base import Lookups, XComAddress, XComBackend
from worker.xcom.object_storage import ObjectStorageXComBackend

MOTO_SCRIPT = """
import logging, sys
from moto.server import ThreadedMotoServer
logging.getLogger("werkzeug").setLevel(logging.ERROR)
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
print(server.get_host_and_port()[1], flush=True)
sys.stdin.read()
"""
CREDENTIALS = {"key": "testing", "secret": "testing"}

# Two Python tasks passing a small value: ``produce`` pushes it, ``consume`` pulls it.
PIPELINE_DAG = """
from tradewind import dag, get_current_context, task

@task
def produce():
    return {"rows": ["x" * 10] * 50}

@task
def consume(value):
    return len(value["rows"])

@dag(dag_id="pipeline")
def pipeline():
    consume(produce())

pipeline()
"""


@dataclass
class Moto:
    endpoint: str

    def new_bucket(self) -> str:
        name = f"tw-{uuid.uuid4().hex[:12]}"
        # No region: moto refuses a LocationConstraint of us-east-1 (FIELD-NOTES.md).
        self.client().create_bucket(Bucket=name)
        return name

    def client(self) -> Any:
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )

    def options(self) -> dict[str, Any]:
        return {**CREDENTIALS, "endpoint_url": self.endpoint}


@dataclass
class Watch:
    """Samples a task instance's heartbeat, and the scheduler's zombie query, every 20 ms."""

    url: str
    task_id: str
    zombie_seconds: float
    heartbeats: list[dt.datetime] = field(default_factory=list)
    zombie_seen: bool = False
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        threshold = dt.timedelta(seconds=self.zombie_seconds)
        while not self.stop.wait(0.02):
            with session_scope(self.url) as session:
                ti = session.scalars(select(TaskInstance).filter_by(task_id=self.task_id)).first()
                zombies = find_zombies(session, utcnow() - threshold)
                if ti is None or ti.state != "running" or ti.last_heartbeat is None:
                    continue
                if not self.heartbeats or self.heartbeats[-1] != ti.last_heartbeat:
                    self.heartbeats.append(ti.last_heartbeat)
                self.zombie_seen |= any(z.id == ti.id for z in zombies)

    def worst_gap_seconds(self) -> float:
        pairs = zip(self.heartbeats, self.heartbeats[1:], strict=False)
        return max((b - a).total_seconds() for a, b in pairs)


@contextmanager
def watching(url: str, task_id: str, zombie_seconds: float) -> Iterator[Watch]:
    """Samples ``task_id``'s heartbeats on a thread while the body runs."""
    watch = Watch(url, task_id, zombie_seconds)
    sampler = threading.Thread(target=watch.run)
    sampler.start()
    try:
        yield watch
    finally:
        watch.stop.set()
        sampler.join()


@contextmanager
def running_moto() -> Iterator[Moto]:
    """moto's S3 on a free loopback port, in a process of its own, stopped on exit."""
    process = subprocess.Popen(
        [sys.executable, "-c", MOTO_SCRIPT], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert process.stdout is not None and process.stdin is not None
    try:
        port = int(process.stdout.readline())
        yield Moto(f"http://127.0.0.1:{port}")
    finally:
        process.stdin.close()
        process.terminate()
        process.wait(10)
        process.stdout.close()


@pytest.fixture(scope="session")
def moto() -> Iterator[Moto]:
    with running_moto() as server:
        yield server


def s3_backend(moto: Moto, threshold_bytes: int = 64) -> ObjectStorageXComBackend:
    return ObjectStorageXComBackend(
        f"s3://{moto.new_bucket()}/xcoms", threshold_bytes, moto.options()
    )


def address(key: str = "return_value", task_id: str = "t", map_index: int = -1) -> XComAddress:
    return XComAddress("d", "manual__2024-01-01T00:00:00+00:00", task_id, map_index, key)


# --- backends named by dotted path in tests (they run in helper and task processes) ------------


def _marker(name: str, text: str) -> None:
    """Leave a file for the test to see (where: TW_TEST_MARKERS, set by the test)."""
    folder = os.environ.get("TW_TEST_MARKERS")
    if folder:
        with (Path(folder) / name).open("a") as out:
            out.write(text + "\n")


class SlowBackend(ObjectStorageXComBackend):
    """Object storage whose calls first sleep ``TW_TEST_SLOW_<HOOK>`` seconds (0 by default)."""

    @classmethod
    def from_settings(cls, settings: Settings, lookups: Lookups) -> XComBackend:
        # Python tasks build their backend too: only the helper process names itself.
        if sys.argv[0].endswith("helper/main.py"):
            _marker("helper.pid", str(os.getpid()))
        return super().from_settings(settings, lookups)

    def _pause(self, hook: str, where: XComAddress) -> None:
        _marker("calls", f"{hook} {where.task_id} {where.key} {time.monotonic():.3f} start")
        time.sleep(float(os.environ.get(f"TW_TEST_SLOW_{hook.upper()}", "0")))

    def store(self, where: XComAddress, value: Any) -> Any:
        self._pause("store", where)
        return super().store(where, value)

    def load(self, where: XComAddress, row: Any) -> Any:
        self._pause("load", where)
        return super().load(where, row)

    def purge(self, where: XComAddress, row: Any) -> None:
        self._pause("purge", where)
        _marker("purged", f"{where.task_id} {where.key}")
        super().purge(where, row)


class FailingBackend(ObjectStorageXComBackend):
    """Object storage whose ``store`` raises for the key ``bad``."""

    def store(self, where: XComAddress, value: Any) -> Any:
        if where.key == "bad":
            raise ValueError(f"no place for {where.key!r}")
        return super().store(where, value)


class ConnectionBackend(ObjectStorageXComBackend):
    """Object storage that prints the password of its connection (which the log must mask)."""

    @classmethod
    def from_settings(cls, settings: Settings, lookups: Lookups) -> XComBackend:
        assert settings.object_storage_conn_id is not None
        connection = lookups.get_connection(settings.object_storage_conn_id)
        print(f"helper connected with password {connection.password}", file=sys.stderr)
        lookups.get_variable("helper_note")
        return super().from_settings(settings, lookups)


NOT_A_BACKEND = object()
