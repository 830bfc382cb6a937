"""``Connection.get`` and ``Variable.get`` for the triggers this process runs, read from the store.

A provider's trigger builds its async hook from a ``conn_id`` (``HttpSensorTrigger`` through
``HttpAsyncHook``, ``S3KeyTrigger`` through ``S3Hook``'s async client), as the task that deferred
did; in a task the supervisor answers, here the triggerer reads the row itself. Hooks call these
through ``sync_to_async`` or a thread, so the loop does not wait on SQL; a trigger calling them
straight from ``run()`` holds the loop for one read.
"""

from __future__ import annotations

from state.core import statement_scope
from state.records import get_connection, get_variable
from tradewind.connections import Connection


class StoreLookups:
    def __init__(self, url: str) -> None:
        self.url = url

    def get_connection(self, conn_id: str) -> Connection:
        with statement_scope(self.url) as session:
            row = get_connection(session, conn_id)
            if row is None:
                raise LookupError(f"connection {conn_id!r} is not defined")
            return Connection(
                conn_id=row.conn_id,
                conn_type=row.conn_type,
                host=row.host,
                login=row.login,
                password=row.password,
                schema=row.schema,
                port=row.port,
                extra=dict(row.extra or {}),
            )

    def get_variable(self, key: str) -> str | None:
        with statement_scope(self.url) as session:
            row = get_variable(session, key)
            return None if row is None else row.value

    def mask_secret(self, value: str) -> None:
        """Nothing: the triggerer's log is its process's, not a try's (the supervisor's to mask)."""
