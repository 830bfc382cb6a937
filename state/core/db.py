"""Engines and sessions for the SQL store: one pooled engine per URL and process.

A worker on Celery's threads pool runs one supervisor per thread on the process's one engine:
its pool holds a connection per slot at least (``set_pool_size``). How an engine is made for
its database (SQLite's WAL mode, PostgreSQL's timeouts) is its dialect's (``state.core.dialects``);
PostgreSQL URLs use psycopg 3.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, exc, inspect, make_url
from sqlalchemy.orm import Session as Session  # re-exported: what callers type a session as
from sqlalchemy.orm import sessionmaker

from state.core.dialects import EngineOptions, statements_for

#: What a store that cannot be reached or read raises (the driver's error, as SQLAlchemy wraps
#: it): callers outside ``state/`` catch it by this name, never through SQLAlchemy.
StoreError = exc.SQLAlchemyError


def display_url(url: str) -> str:
    """``url`` with its password hidden, for messages."""
    return make_url(url).render_as_string(hide_password=True)


def is_embedded(url: str) -> bool:
    """Whether ``url`` names a store kept in a file of this machine (the embedded default)."""
    return statements_for(url).embedded


def normalize_url(url: str) -> str:
    """Route plain ``postgresql://`` URLs to the psycopg 3 driver."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


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
    options = EngineOptions(_POOL["size"], _POOL["overflow"], _NETWORK["seconds"])
    return statements_for(url).create_engine(url, options)


#: How long a connection to PostgreSQL may go unanswered before it counts as lost (seconds).
_NETWORK = {"seconds": 10.0}


def set_network_timeout(seconds: float) -> None:
    """Bound, for the engines made from now on, how long an unanswered connection may hang.

    A link that drops packets (a cut host, a dead router) makes a statement hang rather than
    fail: without a bound, a heartbeat waited forever while its task ran on, and the zombie rule
    started the next try beside it. With it, the statement fails as a lost connection, which the
    outage rule (``state.core.outage``) waits out within its budget and then gives the try up. The
    worker sets it from that budget; a server that is merely slow is not affected (what is
    bounded is unacknowledged data and a silent peer, not a long query).
    """
    _NETWORK["seconds"] = seconds


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
    if not statements_for(url).autocommit_statements:
        with session_scope(url) as session:
            yield session
        return
    with get_engine(url).connect() as connection:
        autocommit = connection.execution_options(isolation_level="AUTOCOMMIT")
        with Session(bind=autocommit, expire_on_commit=False) as session, session.begin():
            yield session


def schema_revision(url: str) -> str | None:
    """The migration the database at ``url`` is at, from Alembic's own table; ``None`` when it
    was never migrated (``state.core.migrate.current_revision`` asks Alembic the same)."""
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
