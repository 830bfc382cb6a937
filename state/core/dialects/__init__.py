"""The store's dialects: one module per database it runs on, chosen once per store URL.

``statements_for(url)`` chooses by the URL (``state.core.db`` makes the engine with it);
``statements_of(session)`` by the session's engine, for code that holds a session only. Both
give the same object for a store. No other module asks which database it runs on: a difference
is a method of ``StoreDialect`` (``state.core.dialects.base``), written in ``postgresql.py`` and
``sqlite.py``.
"""

from __future__ import annotations

import functools

from sqlalchemy import make_url
from sqlalchemy.orm import Session

from state.core.dialects.base import (
    Claimed,
    EngineOptions,
    FirstInPool,
    HotStatements,
    NextByName,
    SlotTaker,
    StoreDialect,
)
from state.core.dialects.common import queued_values
from state.core.dialects.postgresql import PostgreSQL
from state.core.dialects.sqlite import SQLite

__all__ = [
    "Claimed",
    "EngineOptions",
    "FirstInPool",
    "HotStatements",
    "NextByName",
    "SlotTaker",
    "StoreDialect",
    "queued_values",
    "statements_for",
    "statements_named",
    "statements_of",
]

# One object per dialect: their compiled texts are shared by every store of that dialect.
_BY_NAME: dict[str, StoreDialect] = {"postgresql": PostgreSQL(), "sqlite": SQLite()}


@functools.cache
def statements_for(url: str) -> StoreDialect:
    """The dialect of the store at ``url``."""
    name = make_url(url).get_backend_name()
    if name == "postgres":  # the scheme libpq also accepts
        name = "postgresql"
    try:
        return _BY_NAME[name]
    except KeyError:
        raise NotImplementedError(
            f"no store on {name}: Tradewind runs on PostgreSQL and SQLite"
        ) from None


def statements_named(name: str) -> StoreDialect:
    """The dialect SQLAlchemy calls ``name`` (``postgresql``, ``sqlite``)."""
    return statements_for(f"{name}://")


def statements_of(session: Session) -> StoreDialect:
    """The dialect of the store ``session`` is bound to."""
    return _BY_NAME[session.get_bind().dialect.name]
