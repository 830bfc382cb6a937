"""Connections and Variables in the SQL store: read by supervisors, written by the CLI."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from state.core import Connection, Variable


def get_connection(session: Session, conn_id: str) -> Connection | None:
    return session.get(Connection, conn_id)


def list_connections(session: Session) -> list[Connection]:
    return list(session.scalars(select(Connection).order_by(Connection.conn_id)))


def put_connection(session: Session, conn_id: str, **fields: Any) -> Connection:
    """Create ``conn_id`` or replace every field of it (``description`` too)."""
    connection = session.get(Connection, conn_id) or Connection(conn_id=conn_id)
    for name in ("conn_type", "host", "login", "password", "schema", "port", "description"):
        setattr(connection, name, fields.get(name))
    connection.conn_type = fields.get("conn_type") or "generic"
    connection.extra = dict(fields.get("extra") or {})
    session.add(connection)
    return connection


def delete_connection(session: Session, conn_id: str) -> bool:
    result = session.execute(delete(Connection).where(Connection.conn_id == conn_id))
    return bool(result.rowcount)  # type: ignore[attr-defined]


def get_variable(session: Session, key: str) -> Variable | None:
    return session.get(Variable, key)


def list_variables(session: Session) -> list[Variable]:
    return list(session.scalars(select(Variable).order_by(Variable.key)))


def set_variable(
    session: Session, key: str, value: str, is_secret: bool = False, description: str | None = None
) -> None:
    """Create ``key`` or change its value; its description changes only when one is given."""
    variable = session.get(Variable, key) or Variable(key=key)
    variable.value = value
    variable.is_secret = is_secret
    if description is not None:
        variable.description = description
    session.add(variable)


def delete_variable(session: Session, key: str) -> bool:
    result = session.execute(delete(Variable).where(Variable.key == key))
    return bool(result.rowcount)  # type: ignore[attr-defined]
