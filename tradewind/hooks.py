"""``BaseHook``: what Airflow's hooks and providers build on to reach a connection.

In a task, ``BaseHook.get_connection(conn_id)`` asks the try's supervisor, as ``Connection.get``
does; a hook subclass keeps its connection id and reads it when it needs it.
"""

from __future__ import annotations

from typing import Any

from tradewind.connections import Connection


class BaseHook:
    """Subclass it for a hook of your own; ``get_connection`` is the lookup every hook uses."""

    conn_name_attr: str = "conn_id"
    default_conn_name: str = "default_conn_id"
    conn_type: str = ""
    hook_name: str = ""

    def __init__(self, logger_name: str | None = None, **kwargs: Any) -> None:
        self.logger_name = logger_name

    @classmethod
    def get_connection(cls, conn_id: str) -> Connection:
        return Connection.get(conn_id)

    def get_conn(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define get_conn()")
