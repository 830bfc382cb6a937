"""``BaseHook``: what Airflow's hooks and providers build on to reach a connection.

In a task, ``BaseHook.get_connection(conn_id)`` asks the try's supervisor, as ``Connection.get``
does; a hook subclass keeps its connection id and reads it when it needs it. ``self.log`` writes
to the try's log.
"""

from __future__ import annotations

from typing import Any

from tradewind.connections import Connection
from tradewind.logging_mixin import LoggingMixin


class BaseHook(LoggingMixin):
    """Subclass it for a hook of your own; ``get_connection`` is the lookup every hook uses."""

    conn_name_attr: str = "conn_id"
    default_conn_name: str = "default_conn_id"
    conn_type: str = ""
    hook_name: str = ""

    def __init__(self, logger_name: str | None = None, **kwargs: Any) -> None:
        self.logger_name = logger_name
        if logger_name:
            self._logger_name = f"airflow.task.hooks.{logger_name}"

    @classmethod
    def get_connection(cls, conn_id: str) -> Connection:
        return Connection.get(conn_id)

    @classmethod
    def get_hook(cls, conn_id: str, hook_params: dict[str, Any] | None = None) -> Any:
        """The hook of the connection ``conn_id``'s type, on that connection."""
        return cls.get_connection(conn_id).get_hook(hook_params=hook_params)

    def get_conn(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define get_conn()")

    @classmethod
    def get_connection_form_widgets(cls) -> dict[str, Any]:
        return {}

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        return {}
