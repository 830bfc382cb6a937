"""A Redis and a PostgreSQL server of a test's own, on free ports, that it may kill and restart.

The outage tests stop their servers, so they never use this machine's shared ones
(helper rules). No test lives here: the fixtures and the server classes are imported by the
``test_outages_*`` modules and by ``bench/outages.py``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from scheduler.dag_sync import sync_dags
from state.core.db import get_engine, session_scope
from state.core.migrate import upgrade
from tests.integration.conftest import Fleet, _base_env

PG_BIN = next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin"))), Path("/nonexistent"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_port(port: int, timeout: float = 30) -> None:
    """Until something accepts connections on ``port``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port} after {timeout}s")


@dataclass
class RedisServer:
    """redis-server with its AOF on, in ``folder``: killed with SIGKILL, started again on it."""

    folder: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
        argv += ["--appendonly", "yes", "--dir", str(self.folder), "--save", ""]
        log = (self.folder / "redis.log").open("ab")
        self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        wait_port(self.port)

    def kill(self) -> None:
        """SIGKILL: what a crash or an OOM kill does (no shutdown, no final write)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.process = None

    def stop(self) -> None:
        if self.process is not None:
            self.kill()


@dataclass
class PostgresServer:
    """A PostgreSQL cluster in ``folder`` (initdb'd as the ``postgres`` user, trust auth)."""

    folder: Path
    port: int = field(default_factory=free_port)

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    @property
    def data(self) -> Path:
        return self.folder / "data"

    def init(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        _give_to_postgres(self.folder)
        self._as_postgres(
            ["initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync"]
        )

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = str(self.folder / "postgres.log")
        self._as_postgres(["pg_ctl", "-D", str(self.data), "-o", options, "-l", log, "-w", "start"])

    def stop(self, mode: str = "immediate") -> None:
        """``pg_ctl stop -m immediate``: every backend is killed, no checkpoint (a crash)."""
        self._as_postgres(["pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop"])

    def stop_if_running(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self.stop()

    def _as_postgres(self, argv: list[str]) -> None:
        command = [str(PG_BIN / argv[0]), *argv[1:]]
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True)


def _give_to_postgres(folder: Path) -> None:
    if os.geteuid() != 0:
        return
    user = pwd.getpwnam("postgres")
    for path in (folder.parent, folder):
        os.chown(path, user.pw_uid, user.pw_gid)


def _skip_without(binary: str) -> None:
    if shutil.which(binary) is None and not (PG_BIN / binary).exists():
        pytest.skip(f"{binary} is not installed")


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis server of this test's own (AOF on), started."""
    _skip_without("redis-server")
    folder = tmp_path / "redis"
    folder.mkdir()
    server = RedisServer(folder)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this test's own, started (in a folder outside pytest's tmp_path,
    which the ``postgres`` user cannot enter when the tests run as root)."""
    _skip_without("initdb")
    folder = Path(tempfile.mkdtemp(prefix="tradewind-outage-pg-"))
    server = PostgresServer(folder / "cluster")
    try:
        server.init()
        server.start()
        yield server
    finally:
        server.stop_if_running()
        shutil.rmtree(folder, ignore_errors=True)


#: The DAG the outage tests and bench/outages.py run: two tries running side by side through the
#: outage, then one after them. Every body records "<run> <task> <try>" when it starts.
OUTAGE_DAG = """
import os
import time

from tradewind import dag, get_current_context, task


def _record():
    ti = get_current_context()["ti"]
    line = f"{ti.run_id} {ti.task_id} {ti.try_number}\\n"
    fd = os.open(os.environ["OUTAGE_RECORD"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


@task(retries=RETRIES, retry_delay=0)
def sleeper():
    _record()
    time.sleep(float(os.environ["OUTAGE_SLEEP_SECONDS"]))
    return "slept"


@task(retries=RETRIES, retry_delay=0)
def after(left, right):
    _record()
    return f"{left}+{right}"


@dag(dag_id="outage", max_active_runs=4)
def outage():
    after(sleeper.override(task_id="left")(), sleeper.override(task_id="right")())


outage()
"""


def write_outage_dag(folder: Path, retries: int = 0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "outage_dag.py").write_text(OUTAGE_DAG.replace("RETRIES", str(retries)))
    return folder


def bodies_run(record: Path) -> list[str]:
    """Every body started, as "<run> <task> <try>" lines, in the order they started."""
    return record.read_text().splitlines() if record.exists() else []


def outage_fleet(
    home: Path,
    database_url: str,
    broker_url: str,
    sleep_seconds: float,
    retries: int = 0,
    dag_source: str | None = None,
) -> Fleet:
    """A fleet over the outage DAG (or ``dag_source``) on the given store and broker."""
    dags = write_outage_dag(home / "dags", retries)
    if dag_source is not None:
        (dags / "outage_dag.py").write_text(dag_source)
    env = _base_env(home, dags)
    env.update(
        TRADEWIND_DATABASE_URL=database_url,
        TRADEWIND_BROKER_URL=broker_url,
        OUTAGE_RECORD=str(home / "bodies.txt"),
        OUTAGE_SLEEP_SECONDS=str(sleep_seconds),
    )
    upgrade(database_url)
    with session_scope(database_url) as session:
        sync_dags(session, dags)
    get_engine(database_url).dispose()  # this process holds no connection through an outage
    return Fleet(home, env, database_url)


def wait_run_through_outage(fleet: Fleet, dag_id: str, run_id: str, timeout: float = 90) -> str:
    """``fleet.wait_run``, from a test process whose own connections the outage broke too."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fleet.wait_run(dag_id, run_id, max(1.0, deadline - time.monotonic()))
        except OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def try_log_times(fleet: Fleet, run_id: str, task_id: str, try_number: int) -> tuple[str, str]:
    """The times of the first and the last line of a try's log (ISO, so they sort as text)."""
    path = fleet.home / "logs" / "outage" / run_id / task_id / "-1" / f"{try_number}.log"
    lines = [line for line in path.read_text().splitlines() if line.startswith("[")]
    return lines[0][1:].split("]")[0], lines[-1][1:].split("]")[0]
