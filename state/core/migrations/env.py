"""Alembic's environment for the SQL store: run the migrations of ``versions/`` on one connection.

Where the connection comes from, first match wins:
1. ``config.attributes["connection"]``: a caller's open connection. The migrations join its
   transaction, and the caller commits (``state.core.migrate.upgrade`` does).
2. ``config.attributes["url"]``, else the ``sqlalchemy.url`` main option: a connection from the
   process's engine for that URL (``state.core.db.get_engine``), in one transaction.
Offline (``alembic upgrade --sql``), the SQL for the URL's dialect is printed instead of run.

The models (``state.core.models.Base.metadata``) are the target of autogenerate; SQLite migrations
are rendered in batch mode, which works on PostgreSQL as well.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, make_url

from state.core import context_options, get_engine, normalize_url

config = context.config


def _url() -> str:
    url = config.attributes.get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise ValueError(
            "no database for the migrations: set config.attributes['connection'], "
            "config.attributes['url'] or the sqlalchemy.url option"
        )
    return normalize_url(url)


def run_offline() -> None:
    url = _url()
    options = context_options(make_url(url).get_backend_name())
    context.configure(url=url, literal_binds=True, **options)
    with context.begin_transaction():
        context.run_migrations()


def run_online(connection: Connection) -> None:
    context.configure(connection=connection, **context_options(connection.dialect.name))
    with context.begin_transaction():
        context.run_migrations()


def main() -> None:
    connection: Connection | None = config.attributes.get("connection")
    if context.is_offline_mode():
        run_offline()
    elif connection is not None:
        run_online(connection)
    else:
        with get_engine(_url()).connect() as own_connection:
            run_online(own_connection)


main()
