"""What a trigger may ask of the store, set by the process that runs triggers.

Triggers are authoring code (``tradewind/``), which never imports the store; the triggerer
(``triggerer/``) sets ``cross_dag`` here to an object answering the standard provider's
``CrossDagClient`` questions (other DAGs' run and task-instance states) from the store. A trigger
calls it through ``asyncio.to_thread``, so the loop never waits on SQL.

It also sets ``lookups``: where ``Connection.get`` and ``Variable.get`` read outside a task, so
that a provider's trigger (``HttpSensorTrigger``, ``S3KeyTrigger``) builds its async hook from
the connection named by its ``conn_id``, as in a task.
"""

from __future__ import annotations

from typing import Any

_cross_dag: Any = None
_lookups: Any = None


def set_cross_dag(client: Any) -> None:
    global _cross_dag
    _cross_dag = client


def cross_dag() -> Any:
    if _cross_dag is None:
        raise RuntimeError(
            "this trigger reads other DAGs' states: it runs in `tradewind triggerer` only"
        )
    return _cross_dag


def set_lookups(client: Any) -> None:
    """``client``: ``get_connection(conn_id)``, ``get_variable(key)``, ``mask_secret(value)``."""
    global _lookups
    _lookups = client


def lookups() -> Any:
    """The process's look-ups outside a task (the triggerer's store), or None."""
    return _lookups
