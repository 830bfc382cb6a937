"""``INSERT … ON CONFLICT`` for the two dialects the store runs on (PostgreSQL and SQLite).

Two schedulers may create the same row at once (a task instance for a task new to the DAG, a
DAG seen for the first time, the default pool): a conflict on the unique key is the expected
outcome for the second, and it must neither fail nor abort the rest of its transaction, which a
plain INSERT does on PostgreSQL ("current transaction is aborted").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.orm import Session

from state.core.dialects import statements_of


def insert_for(session: Session) -> Any:
    """The dialect's ``insert`` construct, which has ``on_conflict_do_nothing/do_update``."""
    return statements_of(session).insert


def insert_missing(
    session: Session, model: type[Any], rows: Sequence[Mapping[str, Any]], keys: Sequence[str]
) -> None:
    """Insert ``rows`` in one statement, skipping any whose unique ``keys`` already exist."""
    if rows:
        statement = insert_for(session)(model).values(list(rows))
        session.execute(statement.on_conflict_do_nothing(index_elements=list(keys)))
