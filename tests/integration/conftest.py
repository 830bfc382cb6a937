"""A real fleet for integration tests: scheduler and Celery worker processes on real services.

``fleet`` runs on PostgreSQL + Redis (this machine's servers; a fresh database and a Redis
database number of its own); ``embedded_fleet`` runs on the embedded defaults (SQLite and
kombu's filesystem broker under a temporary TRADEWIND_HOME).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest
import redis
from sqlalchemy import select

from scheduler.dag_sync import sync_dags
from state.core.db import get_engine, session_scope
from state.core.models import DagRun, TaskInstance, XCom
from state.engine.runs import create_run
from tests.stores import migrated

DAGS = Path(__file__).parent / "dags"
REDIS = "redis://127.0.0.1:6379"
FINISHED_RUN = ("success", "failed")


@dataclass
class Fleet:
    """Processes of one test's fleet, and helpers to drive and observe its runs."""

    home: Path
    env: dict[str, str]
    url: str
    processes: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = field(default_factory=list)

    def start(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        out = (self.home / f"{name}.log").open("ab")
        process = subprocess.Popen(
            argv, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.processes.append((process, out))
        return process

    def start_worker(
        self, name: str = "w1", concurrency: int = 2, pool: str | None = None
    ) -> subprocess.Popen[bytes]:
        """``celery -A worker worker``; ``pool``: its ``--pool`` (None: the default, threads)."""
        options = ["--pool", pool] if pool is not None else []
        return self.start(
            name,
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "worker",
                "worker",
                *options,
                "-c",
                str(concurrency),
                "-n",
                f"{name}@%h",
                "--loglevel",
                "INFO",
                "--without-gossip",
                "--without-mingle",
            ],
        )

    def start_scheduler(self, name: str = "scheduler") -> subprocess.Popen[bytes]:
        return self.start(name, [sys.executable, "-m", "cli", "scheduler"])

    def start_api(self, name: str = "api") -> str:
        """``tradewind api-server`` on a free port, once it answers; its base URL."""
        port = _free_port()
        argv = [sys.executable, "-m", "cli", "api-server", "--host", "127.0.0.1"]
        self.start(name, [*argv, "--port", str(port)])
        base = f"http://127.0.0.1:{port}"
        self.wait_for(lambda: _answers(f"{base}/api/v2/monitor/health"), 60, "the API server")
        return base

    def log(self, name: str) -> str:
        return (self.home / f"{name}.log").read_text(errors="replace")

    def trigger(self, dag_id: str, run_id: str, conf: dict[str, Any] | None = None) -> None:
        with session_scope(self.url) as session:
            sync_dags(session, Path(self.env["TRADEWIND_DAGS_FOLDER"]))
            create_run(session, dag_id, run_id=run_id, conf=conf)

    def run_state(self, dag_id: str, run_id: str) -> str:
        with session_scope(self.url) as session:
            run = session.scalars(select(DagRun).filter_by(dag_id=dag_id, run_id=run_id)).one()
            return str(run.state)

    def wait_run(self, dag_id: str, run_id: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.run_state(dag_id, run_id)
            if state in FINISHED_RUN:
                return state
            time.sleep(0.2)
        raise AssertionError(
            f"run {run_id} not finished after {timeout}s: {self.task_states(dag_id, run_id)}"
        )

    def wait_for(self, predicate: Any, timeout: float = 30, what: str = "condition") -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}")

    def task_instances(self, dag_id: str, run_id: str) -> dict[str, TaskInstance]:
        with session_scope(self.url) as session:
            rows = session.scalars(select(TaskInstance).filter_by(dag_id=dag_id, run_id=run_id))
            return {ti.task_id: ti for ti in rows}

    def task_states(self, dag_id: str, run_id: str) -> dict[str, tuple[str, int]]:
        return {
            tid: (str(ti.state), ti.try_number)
            for tid, ti in self.task_instances(dag_id, run_id).items()
        }

    def xcom(self, dag_id: str, run_id: str, task_id: str, key: str = "return_value") -> str | None:
        with session_scope(self.url) as session:
            return session.scalars(
                select(XCom.value).filter_by(dag_id=dag_id, run_id=run_id, task_id=task_id, key=key)
            ).first()

    def stop(self) -> None:
        for process, _ in self.processes:
            _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for process, out in self.processes:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait()
            out.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signum)


def _base_env(home: Path, dags: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRADEWIND_")}
    env.update(
        TRADEWIND_HOME=str(home),
        TRADEWIND_DAGS_FOLDER=str(dags),
        TRADEWIND_HEARTBEAT_SECONDS="0.5",
        TRADEWIND_ZOMBIE_THRESHOLD_SECONDS="4",
        TRADEWIND_TASK_QUEUED_TIMEOUT_SECONDS="30",
        TRADEWIND_SCHEDULER_INTERVAL_SECONDS="0.2",
        TRADEWIND_KILL_GRACE_SECONDS="1",
        PYTHONUNBUFFERED="1",
    )
    return env


@pytest.fixture
def redis_url() -> Iterator[str]:
    """A Redis database number of this test's own (locked against parallel runs), flushed."""
    for number in range(1, 16):
        lock = open(f"/tmp/tradewind-test-redis-db-{number}.lock", "w")  # noqa: SIM115
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        url = f"{REDIS}/{number}"
        client = redis.Redis.from_url(url)
        client.flushdb()
        try:
            yield url
        finally:
            client.flushdb()
            client.close()
            lock.close()
        return
    raise RuntimeError("no free Redis database number (1-15) for this test")


@pytest.fixture
def make_fleet(tmp_path: Path, pg_url: str, redis_url: str) -> Iterator[Callable[..., Fleet]]:
    """Build a fleet on PostgreSQL + Redis over ``dags``, with settings overridden by keyword."""
    made: list[Fleet] = []

    def make(dags: Path = DAGS, **env_overrides: str) -> Fleet:
        env = _base_env(tmp_path, dags)
        env.update(TRADEWIND_DATABASE_URL=pg_url, TRADEWIND_BROKER_URL=redis_url, **env_overrides)
        migrated(pg_url)
        with session_scope(pg_url) as session:
            sync_dags(session, dags)
        made.append(Fleet(tmp_path, env, pg_url))
        return made[-1]

    yield make
    for running in made:
        running.stop()
    get_engine(pg_url).dispose()


@pytest.fixture
def fleet(make_fleet: Callable[..., Fleet]) -> Fleet:
    return make_fleet()


@pytest.fixture
def embedded_fleet(tmp_path: Path) -> Iterator[Fleet]:
    env = _base_env(tmp_path, DAGS)
    url = f"sqlite:///{tmp_path / 'tradewind.db'}"
    migrated(url)
    running = Fleet(tmp_path, env, url)
    yield running
    running.stop()
    get_engine(url).dispose()
