"""XCom rows and state-store values of task instances, read and written with fenced writes.

Values are JSON text here; what the text means (a value, or a reference to an object in
object storage) is the business of the backend that wrote it. For state values, this module
knows one thing more: which rows refer to an object (``state/core/objects.py``), so that deletes
report them (their objects must go too) and housekeeping leaves them alone.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import ColumnElement, Delete, delete, make_url, not_, or_, select, true
from sqlalchemy.orm import Session

from state.core import REFERENCE_PREFIX, Fence, TaskStateValue, XCom, assert_fence, utcnow


@dataclass(frozen=True)
class TIKey:
    """The identity of a task instance (one map index of one task of one run)."""

    dag_id: str
    run_id: str
    task_id: str
    map_index: int = -1


def _match(table: type[XCom] | type[TaskStateValue], key: TIKey):  # type: ignore[no-untyped-def]
    return (
        table.dag_id == key.dag_id,
        table.run_id == key.run_id,
        table.task_id == key.task_id,
        table.map_index == key.map_index,
    )


def write_xcom(session: Session, fence: Fence, ti: TIKey, key: str, text: str) -> None:
    assert_fence(session, fence)
    session.execute(delete(XCom).where(*_match(XCom, ti), XCom.key == key))
    session.add(XCom(**ti.__dict__, key=key, value=text))


def read_xcom(session: Session, ti: TIKey, key: str) -> str | None:
    query = select(XCom.value).where(*_match(XCom, ti), XCom.key == key)
    return session.scalars(query).first()


def read_xcoms(
    session: Session, dag_id: str, run_id: str, task_id: str, key: str
) -> list[tuple[int, str]]:
    """Every map index's XCom of one task, in map-index order."""
    query = (
        select(XCom.map_index, XCom.value)
        .where(
            XCom.dag_id == dag_id, XCom.run_id == run_id, XCom.task_id == task_id, XCom.key == key
        )
        .order_by(XCom.map_index)
    )
    return [(row.map_index, row.value) for row in session.execute(query)]


def read_state(session: Session, ti: TIKey, key: str, now: dt.datetime | None = None) -> str | None:
    now = now or utcnow()
    query = select(TaskStateValue.value).where(
        *_match(TaskStateValue, ti),
        TaskStateValue.key == key,
        or_(TaskStateValue.expires_at.is_(None), TaskStateValue.expires_at > now),
    )
    return session.scalars(query).first()


def read_states_with_prefix(session: Session, ti: TIKey, prefix: str) -> dict[str, str]:
    """Every unexpired key of a task instance starting with ``prefix``: one query."""
    query = select(TaskStateValue.key, TaskStateValue.value).where(
        *_match(TaskStateValue, ti),
        TaskStateValue.key.startswith(prefix, autoescape=True),
        or_(TaskStateValue.expires_at.is_(None), TaskStateValue.expires_at > utcnow()),
    )
    return {row.key: row.value for row in session.execute(query)}


def write_state(
    session: Session, fence: Fence, ti: TIKey, key: str, text: str, expires_at: dt.datetime | None
) -> None:
    assert_fence(session, fence)
    session.execute(
        delete(TaskStateValue).where(*_match(TaskStateValue, ti), TaskStateValue.key == key)
    )
    session.add(
        TaskStateValue(
            **ti.__dict__, key=key, value=text, expires_at=expires_at, updated_at=utcnow()
        )
    )


def refers_to_object() -> ColumnElement[bool]:
    """State rows whose text is a reference to an object, not the value itself."""
    return TaskStateValue.value.startswith(REFERENCE_PREFIX, autoescape=True)


def object_reference(session: Session, ti: TIKey, key: str) -> str | None:
    """The text of ``key``'s row if it refers to an object (expired or not), else None."""
    query = select(TaskStateValue.value).where(
        *_match(TaskStateValue, ti), TaskStateValue.key == key, refers_to_object()
    )
    return session.scalars(query).first()


def delete_returning_objects(session: Session, statement: Delete) -> dict[str, str]:
    """Run a DELETE of state rows; returns the deleted rows that referred to objects, by key.

    Whoever deletes a row must be told of its object, or the object outlives every row that
    could lead to it. A SELECT of the same rows first, in the same transaction, rather than
    ``DELETE … RETURNING``, which SQLite has only since 3.35.
    """
    query = select(TaskStateValue.key, TaskStateValue.value).where(
        statement.whereclause if statement.whereclause is not None else true(),
        refers_to_object(),
    )
    objects = {row.key: row.value for row in session.execute(query)}
    session.execute(statement)
    return objects


def delete_states(
    session: Session, fence: Fence, ti: TIKey, keys: list[str] | None = None
) -> dict[str, str]:
    """Delete some keys, or every key when ``keys`` is None; returns those that had objects."""
    assert_fence(session, fence)
    statement = delete(TaskStateValue).where(*_match(TaskStateValue, ti))
    if keys is not None:
        statement = statement.where(TaskStateValue.key.in_(keys))
    return delete_returning_objects(session, statement)


def purge_expired_states(session: Session, now: dt.datetime | None = None) -> int:
    """Housekeeping: drop state values past their ``expires_at``.

    A row that refers to an object stays: object storage does not apply ``expires_at`` (the row
    still hides the value once expired), and the row is how a delete or clear finds the object.
    """
    statement = delete(TaskStateValue).where(
        TaskStateValue.expires_at <= (now or utcnow()), not_(refers_to_object())
    )
    return int(session.execute(statement).rowcount)  # type: ignore[attr-defined]


#: The largest value, in bytes, a ``Text`` column takes on each database. PostgreSQL caps a field
#: at 1 GB; SQLite a string at SQLITE_MAX_LENGTH (10**9 by default); MySQL's TEXT at 64 KiB.
DATABASE_MAX_VALUE_BYTES: dict[str, int] = {
    "postgresql": (1 << 30) - 1,
    "sqlite": 1_000_000_000,
    "mysql": 65_535,
}


def database_max_value_bytes(url: str) -> int:
    """What the database at ``url`` accepts in one value; a write above it must not be sent."""
    backend = make_url(url).get_backend_name()
    return DATABASE_MAX_VALUE_BYTES.get(backend, DATABASE_MAX_VALUE_BYTES["mysql"])
