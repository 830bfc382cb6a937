"""Engines and sessions for the SQL store: one pooled engine per URL and process.

A worker on Celery's threads pool runs one supervisor per thread on the process's one engine:
its pool holds a connection per slot at least (``set_pool_size``).

SQLite runs in WAL mode with a busy timeout (commits are ~4x cheaper than with the default
journal, and readers do not block the writer); PostgreSQL URLs use psycopg 3.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Dialect, Engine, create_engine, event, exc, inspect, make_url
from sqlalchemy.orm import Session as Session  # re-exported: what callers type a session as
from sqlalchemy.orm import sessionmaker

#: What a store that cannot be reached or read raises (the driver's error, as SQLAlchemy wraps
#: it): callers outside ``state/`` catch it by this name, never through SQLAlchemy.
StoreError = exc.SQLAlchemyError

#: A pooled connection idle for longer than this is pinged before it is used again.
IDLE_SECONDS_BEFORE_PING = 10.0


def display_url(url: str) -> str:
    """``url`` with its password hidden, for messages."""
    return make_url(url).render_as_string(hide_password=True)


def is_sqlite(url: str) -> bool:
    """Whether ``url`` names a SQLite store (the embedded default)."""
    return make_url(url).get_backend_name() == "sqlite"


def normalize_url(url: str) -> str:
    """Route plain ``postgresql://`` URLs to the psycopg 3 driver."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


#: How long a SQLite connection waits for another one's lock (its busy timeout), in seconds.
SQLITE_BUSY_SECONDS = 30


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    _switch_to_wal(cursor)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_SECONDS * 1000}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _switch_to_wal(cursor: sqlite3.Cursor) -> None:
    """``PRAGMA journal_mode=WAL``, tried again while another connection holds the file.

    The switch needs the file to itself for a moment, and SQLite refuses it at once ("database
    is locked"), busy timeout or not, while another connection switches or writes: two processes
    opening a new store together (``standalone`` and a ``dags trigger``) failed that way.
    """
    deadline = time.monotonic() + SQLITE_BUSY_SECONDS
    pause = 0.005
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


def _sqlite_begin(conn: Any) -> None:
    # Take the write lock at BEGIN so two writers queue on busy_timeout instead of one of them
    # failing with "database is locked" when it upgrades a read transaction.
    conn.exec_driver_sql("BEGIN IMMEDIATE")


_ENGINES: dict[str, Engine] = {}
_SESSIONS: dict[str, sessionmaker[Session]] = {}
# Two threads asking at once for a new URL's engine must get the same one: a second engine's
# connections would be opened beside the first's and never pooled with them.
_CREATING = threading.Lock()


def get_engine(url: str) -> Engine:
    """The pooled engine for ``url`` in this process (a forked child must not reuse it)."""
    url = normalize_url(url)
    engine = _ENGINES.get(url)
    if engine is None:
        with _CREATING:
            engine = _ENGINES.get(url)
            if engine is None:
                engine = _ENGINES[url] = _create(url)
    return engine


#: Connections a PostgreSQL engine keeps open, and how many more it may open at busy times.
_POOL = {"size": 5, "overflow": 5}


def set_pool_size(concurrent_users: int) -> None:
    """Size the pools of the engines made from now on for ``concurrent_users`` threads at once.

    A worker on the threads pool runs ``--concurrency`` supervisors in one process, each using
    a connection at a time, and its XCom thread another while a row is written: past the pool's
    size plus its overflow, a heartbeat would wait for a connection (30 s, then fail) while its
    task ran on. Each slot gets one kept open, and as many again at busy times.
    """
    _POOL["size"] = max(5, concurrent_users)
    _POOL["overflow"] = max(5, concurrent_users)


def _create(url: str) -> Engine:
    if url.startswith("sqlite"):
        database = make_url(url).database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url, connect_args={"timeout": SQLITE_BUSY_SECONDS, "isolation_level": None}
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    engine = create_engine(
        url,
        pool_size=_POOL["size"],
        max_overflow=_POOL["overflow"],
        connect_args=_tcp_timeouts(),
    )
    event.listen(engine, "connect", _server_side_timeouts)
    event.listen(engine.pool, "checkin", _note_idle_since)
    event.listen(engine.pool, "checkout", functools.partial(_ping_if_idle, engine.dialect))
    return engine


#: How long a connection to PostgreSQL may go unanswered before it counts as lost (seconds).
_NETWORK = {"seconds": 10.0}


def set_network_timeout(seconds: float) -> None:
    """Bound, for the engines made from now on, how long an unanswered connection may hang.

    A link that drops packets (a cut host, a dead router) makes a statement hang rather than
    fail: without a bound, a heartbeat waited forever while its task ran on, and the zombie rule
    started the next try beside it. With it, the statement fails as a lost connection, which the
    outage rule (``state.outage``) waits out within its budget and then gives the try up. The
    worker sets it from that budget; a server that is merely slow is not affected (what is
    bounded is unacknowledged data and a silent peer, not a long query).
    """
    _NETWORK["seconds"] = seconds


def _network_bounds() -> tuple[float, int]:
    """The network bound in seconds, and the keepalive probe interval derived from it."""
    seconds = max(_NETWORK["seconds"], 1.0)
    return seconds, max(int(seconds / 3), 1)


def _tcp_timeouts() -> dict[str, Any]:
    seconds, probe = _network_bounds()
    return {
        "connect_timeout": max(int(seconds), 2),
        # Unacknowledged data for this long: the connection is gone (Linux, libpq >= 12).
        "tcp_user_timeout": int(seconds * 1000),
        # A peer silent while we wait for its answer: probed after ``probe`` idle seconds.
        "keepalives": 1,
        "keepalives_idle": probe,
        "keepalives_interval": probe,
        "keepalives_count": 2,
    }


def _server_side_timeouts(dbapi_connection: Any, _record: Any) -> None:
    """The server's end of the connection gets the same bounds as ours.

    A connection this process gave up on while the network was cut (``tcp_user_timeout``) is
    closed here only: the server's backend waits for its next statement, still in its
    transaction and holding its row locks, until its own keepalives notice, which by default is
    two hours; meanwhile every try that needs those rows waits for them. Set as session settings
    (not the ``options`` startup parameter, which PgBouncer refuses); committed, or the pool's
    reset would roll them back.
    """
    seconds, probe = _network_bounds()
    with dbapi_connection.cursor() as cursor:
        cursor.execute(
            f"SET tcp_keepalives_idle = {probe}; SET tcp_keepalives_interval = {probe};"
            f" SET tcp_keepalives_count = 2; SET tcp_user_timeout = {int(seconds * 1000)}"
        )
    dbapi_connection.commit()


# ``pool_pre_ping`` pings on every checkout: one round trip more for each of a try's three
# transactions, 7% of a worker's time on a noop try. A connection in steady use is known to
# be alive; the ones that go stale (a server restart, an idle timeout, a dropped NAT entry) are
# those left idle, so only those are pinged. A connection that dies while in use fails that
# statement, and SQLAlchemy then invalidates the rest of the pool.
def _note_idle_since(_dbapi_connection: Any, record: Any) -> None:
    record.info["idle_since"] = time.monotonic()


def _ping_if_idle(dialect: Dialect, dbapi_connection: Any, record: Any, _proxy: Any) -> None:
    idle_since = record.info.get("idle_since")
    if idle_since is None or time.monotonic() - idle_since < IDLE_SECONDS_BEFORE_PING:
        return
    try:
        dialect.do_ping(dbapi_connection)  # what pool_pre_ping runs
    except Exception as error:
        # The pool discards this connection and checks out (or opens) another.
        raise exc.DisconnectionError(
            f"a pooled connection idle for a while is gone: {error}"
        ) from error


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
    factory = _SESSIONS.get(url)
    if factory is None:
        factory = _SESSIONS.setdefault(url, sessionmaker(get_engine(url), expire_on_commit=False))
    return factory


@contextmanager
def session_scope(url: str) -> Iterator[Session]:
    """A session that commits on success and rolls back on any exception."""
    with session_factory(url).begin() as session:
        yield session


@contextmanager
def statement_scope(url: str) -> Iterator[Session]:
    """A session for work that is one statement (or statements each whole on its own).

    On PostgreSQL the connection is in autocommit: each statement commits as it runs, which
    spares the BEGIN and COMMIT round trips a transaction costs (two of a claim's three, two of
    a try's end's three). Elsewhere it is an ordinary transaction, as ``session_scope``.
    """
    engine = get_engine(url)
    if engine.dialect.name != "postgresql":
        with session_scope(url) as session:
            yield session
        return
    with engine.connect() as connection:
        autocommit = connection.execution_options(isolation_level="AUTOCOMMIT")
        with Session(bind=autocommit, expire_on_commit=False) as session, session.begin():
            yield session


def schema_revision(url: str) -> str | None:
    """The migration the database at ``url`` is at, from Alembic's own table; ``None`` when it
    was never migrated (``state.migrate.current_revision`` asks Alembic the same)."""
    with get_engine(url).connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return None
        return connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()


def store_answers(url: str) -> bool:
    """Whether the store at ``url`` answers a query now (for health checks)."""
    try:
        with get_engine(url).connect() as connection:
            connection.exec_driver_sql("SELECT 1")
    except exc.SQLAlchemyError:
        return False
    return True
