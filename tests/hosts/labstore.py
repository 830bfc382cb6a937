"""The store host's servers: a PostgreSQL and a Redis (AOF on) of its own, bound to its address.

Both also listen on a Unix socket in the lab's folder. The filesystem is shared by every
namespace while sockets on it are not bound to any network, so the observer (the test or the
bench, in the machine's own namespace) reads the store through them: a cut link never blinds it.
"""

from __future__ import annotations

import os
import pwd
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
import redis
from netlab import Lab, Popen, run

PG_BIN = next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin"))), Path("/nonexistent"))
DATABASE = "tradewind"
_PG_CONF = """
listen_addresses = '{address}'
port = 5432
unix_socket_directories = '{sockets}'
max_connections = 200
fsync = off
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
"""
_HBA = """
local all all trust
host all all {subnet}.0/24 trust
"""


@dataclass
class Store:
    """URLs of the store host's servers: ``*_url`` for hosts, ``observer_*`` for this process."""

    address: str
    folder: Path
    postgres: Popen
    redis: Popen

    @property
    def database_url(self) -> str:
        return f"postgresql://postgres@{self.address}:5432/{DATABASE}"

    @property
    def broker_url(self) -> str:
        return f"redis://{self.address}:6379/0"

    @property
    def observer_database_url(self) -> str:
        return f"postgresql://postgres@/{DATABASE}?host={self.folder / 'pg-sockets'}"

    @property
    def observer_redis_url(self) -> str:
        return f"unix://{self.folder / 'redis.sock'}?db=0"

    def admin(self) -> psycopg.Connection[tuple[object, ...]]:
        """A connection to the server's ``postgres`` database, autocommit."""
        return psycopg.connect(
            dbname="postgres", user="postgres", host=str(self.folder / "pg-sockets"),
            autocommit=True,
        )  # fmt: skip

    def reset_database(self) -> None:
        """An empty ``tradewind`` database (connections to the old one ended)."""
        with self.admin() as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
            admin.execute(f"CREATE DATABASE {DATABASE}")
        with psycopg.connect(self.observer_database_url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")

    def flush_redis(self) -> None:
        client = redis.Redis.from_url(self.observer_redis_url)
        try:
            client.flushall()
        finally:
            client.close()


def start_store(lab: Lab, host: str) -> Store:
    """Start PostgreSQL and Redis inside ``host``'s namespace and wait until both answer."""
    address = lab.hosts[host].address
    folder = lab.folder(host)
    postgres = _start_postgres(lab, host, address, folder)
    (folder / "redis").mkdir()
    redis_server = lab.start(
        host,
        ["redis-server", "--bind", address, "--port", "6379", "--appendonly", "yes",
         "--save", "", "--dir", str(folder / "redis"), "--protected-mode", "no",
         "--unixsocket", str(folder / "redis.sock"), "--unixsocketperm", "700"],
        dict(os.environ),
        folder / "redis.log",
    )  # fmt: skip
    store = Store(address, folder, postgres, redis_server)
    _wait(lambda: _answers(store), f"the store's servers (see {folder})")
    store.reset_database()
    return store


def _start_postgres(lab: Lab, host: str, address: str, folder: Path) -> Popen:
    """initdb a cluster owned by the ``postgres`` user (PostgreSQL refuses to run as root)."""
    data, sockets = folder / "pg", folder / "pg-sockets"
    sockets.mkdir()
    postgres_user = pwd.getpwnam("postgres")
    os.chown(sockets, postgres_user.pw_uid, postgres_user.pw_gid)
    data.mkdir(mode=0o700)
    os.chown(data, postgres_user.pw_uid, postgres_user.pw_gid)
    run(["runuser", "-u", "postgres", "--", str(PG_BIN / "initdb"), "-D", str(data),
          "-U", "postgres", "--auth=trust", "--no-sync"])  # fmt: skip
    with (data / "postgresql.conf").open("a") as conf:
        conf.write(_PG_CONF.format(address=address, sockets=sockets))
    (data / "pg_hba.conf").write_text(_HBA.format(subnet=address.rsplit(".", 1)[0]))
    return lab.start(
        host,
        ["runuser", "-u", "postgres", "--", str(PG_BIN / "postgres"), "-D", str(data)],
        dict(os.environ),
        folder / "postgres.log",
    )


def _answers(store: Store) -> bool:
    try:
        with store.admin():
            pass
        client = redis.Redis.from_url(store.observer_redis_url)
        try:
            client.ping()
        finally:
            client.close()
    except (psycopg.OperationalError, redis.ConnectionError):
        return False
    return True


def _wait(predicate: object, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise TimeoutError(f"timed out waiting for {what}")


def have_servers() -> str | None:
    """Why the store host cannot be started here, or None."""
    for binary in (PG_BIN / "initdb", Path(shutil.which("redis-server") or "/nonexistent")):
        if not binary.exists():
            return f"{binary.name} not found (PostgreSQL and Redis servers are needed)"
    return None
