"""Connections and Variables in the SQL store: read by supervisors, written by the CLI.

Their secrets are sealed at rest by the models themselves (``state/core/cipher.py``): what is
read here is plain, what is written is encrypted with the first key. ``reseal_connection`` and
``reseal_variable`` are ``tradewind rotate-fernet-key``'s steps, one row each.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

if TYPE_CHECKING:
    from tradewind.connections import Connection as TaskConnection

from state.core import Connection, Variable, current_cipher, statement_scope

#: What resealing a row did: re-encrypted it (or encrypted it for the first time), found it
#: already under the first key, or found it gone.
Resealed = Literal["resealed", "current", "gone"]


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


def connection_ids(session: Session) -> list[str]:
    return list(session.scalars(select(Connection.conn_id).order_by(Connection.conn_id)))


def variable_keys(session: Session) -> list[str]:
    return list(session.scalars(select(Variable.key).order_by(Variable.key)))


def reseal_connection(session: Session, conn_id: str) -> Resealed:
    """Encrypt ``conn_id``'s password and extra with the first key; ``SecretUnreadable`` when no
    configured key opens them. The row is locked until the transaction ends: an edit made
    meanwhile is not overwritten with the old value."""
    row = session.get(Connection, conn_id, with_for_update=True)
    if row is None:
        return "gone"
    cipher, what = current_cipher(), f"connection {conn_id!r}"
    password = extra = None
    if row.stored_password is not None:
        password = cipher.reseal(row.stored_password, row.is_encrypted, f"{what}'s password")
    if row.stored_extra and (row.is_extra_encrypted or isinstance(row.stored_extra, dict)):
        stored = row.stored_extra if row.is_extra_encrypted else json.dumps(row.stored_extra)
        extra = cipher.reseal(stored, row.is_extra_encrypted, f"{what}'s extra")
    if password is not None:
        row.stored_password, row.is_encrypted = password, True
    if extra is not None:
        row.stored_extra, row.is_extra_encrypted = extra, True
    return "current" if password is None and extra is None else "resealed"


def reseal_variable(session: Session, key: str) -> Resealed:
    """Encrypt variable ``key``'s value with the first key (see ``reseal_connection``)."""
    row = session.get(Variable, key, with_for_update=True)
    if row is None:
        return "gone"
    value = current_cipher().reseal(row.stored_value, row.is_encrypted, f"variable {key!r}")
    if value is None:
        return "current"
    row.stored_value, row.is_encrypted = value, True
    return "resealed"


class StoreLookups:
    """``Connection.get`` and ``Variable.get`` read from the store, for code that runs outside a
    task (a clear's object purgers, the triggerer's triggers, the failure e-mail's SMTP).

    In the triggerer, hooks call these through ``sync_to_async`` or a thread, so the loop does
    not wait on SQL; a trigger calling them straight from ``run()`` holds the loop for one read.
    """

    def __init__(self, url: str) -> None:
        self.url = url

    def find_connection(self, conn_id: str) -> TaskConnection | None:
        from tradewind.connections import Connection as TaskConnection

        with statement_scope(self.url) as session:
            row = get_connection(session, conn_id)
            if row is None:
                return None
            return TaskConnection(
                conn_id=row.conn_id,
                conn_type=row.conn_type,
                host=row.host,
                login=row.login,
                password=row.password,
                schema=row.schema,
                port=row.port,
                extra=dict(row.extra or {}),
            )

    def get_connection(self, conn_id: str) -> TaskConnection:
        found = self.find_connection(conn_id)
        if found is None:
            raise LookupError(f"connection {conn_id!r} is not defined")
        return found

    def get_variable(self, key: str) -> str | None:
        with statement_scope(self.url) as session:
            row = get_variable(session, key)
            return None if row is None else row.value

    def mask_secret(self, value: str) -> None:
        """Nothing: outside a task there is no try's log to mask (the supervisor's job)."""
