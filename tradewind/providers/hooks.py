"""``Connection.get_hook()``: a connection's hook, found by its type among the installed providers.

The providers' entry points map each connection type to a hook class (``registry.py``); the hook
is built with the connection's id under the keyword the class names in ``conn_name_attr``
(``postgres_conn_id`` for ``PostgresHook``), as Airflow builds it.
"""

from __future__ import annotations

from typing import Any

from tradewind.exceptions import AirflowException
from tradewind.providers.compat import import_string
from tradewind.providers.registry import hook_class_name

#: URI schemes Airflow reads as another connection type.
SCHEMES = {"postgresql": "postgres"}


def hook_for(connection: Any, hook_params: dict[str, Any]) -> Any:
    path = hook_class_name(SCHEMES.get(connection.conn_type, connection.conn_type))
    if path is None:
        raise AirflowException(
            f"connection {connection.conn_id}: no installed provider has a hook for the "
            f"connection type {connection.conn_type!r} (tradewind providers list)"
        )
    try:
        hook_class = import_string(path)
    except ImportError as error:
        raise AirflowException(
            f"connection {connection.conn_id}: its hook {path} cannot be imported: {error}"
        ) from None
    attribute = getattr(hook_class, "conn_name_attr", None) or "conn_id"
    return hook_class(**{attribute: connection.conn_id}, **hook_params)
