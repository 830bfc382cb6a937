"""Engines and sessions for the SQL store: one pooled engine per URL and process.

SQLite runs in WAL mode with a busy timeout (commits are ~4x cheaper than with the default
journal, and readers do not block the writer); PostgreSQL URLs use psycopg 3.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, make_url
from sqlalchemy.orm import Session, sessionmaker


def normalize_url(url: str) -> str:
    """Route plain ``postgresql://`` URLs to the psycopg 3 driver."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _sqlite_begin(conn: Any) -> None:
    # Take the write lock at BEGIN so two writers queue on busy_timeout instead of one of them
    # failing with "database is locked" when it upgrades a read transaction.
    conn.exec_driver_sql("BEGIN IMMEDIATE")


_ENGINES: dict[str, Engine] = {}
_SESSIONS: dict[str, sessionmaker[Session]] = {}


def get_engine(url: str) -> Engine:
    """The pooled engine for ``url`` in this process (a forked child must not reuse it)."""
    url = normalize_url(url)
    if url not in _ENGINES:
        _ENGINES[url] = _create(url)
    return _ENGINES[url]


def _create(url: str) -> Engine:
    if url.startswith("sqlite"):
        database = make_url(url).database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30, "isolation_level": None})
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=5)


def forget_engines_after_fork() -> None:
    """In a forked child: drop the parent's pooled connections without closing them.

    Closing them would close sockets the parent still uses (SQLAlchemy's advice for os.fork()).
    """
    for engine in _ENGINES.values():
        engine.dispose(close=False)
    _ENGINES.clear()
    _SESSIONS.clear()


def session_factory(url: str) -> sessionmaker[Session]:
    url = normalize_url(url)
    if url not in _SESSIONS:
        _SESSIONS[url] = sessionmaker(get_engine(url), expire_on_commit=False)
    return _SESSIONS[url]


@contextmanager
def session_scope(url: str) -> Iterator[Session]:
    """A session that commits on success and rolls back on any exception."""
    with session_factory(url).begin() as session:
        yield session
