"""What a trigger may ask of the store, set by the process that runs triggers.

Triggers are authoring code (``tradewind/``), which never imports the store; the triggerer
(``triggerer/``) sets ``cross_dag`` here to an object answering the standard provider's
``CrossDagClient`` questions (other DAGs' run and task-instance states) from the store. A trigger
calls it through ``asyncio.to_thread``, so the loop never waits on SQL.
"""

from __future__ import annotations

from typing import Any

_cross_dag: Any = None


def set_cross_dag(client: Any) -> None:
    global _cross_dag
    _cross_dag = client


def cross_dag() -> Any:
    if _cross_dag is None:
        raise RuntimeError(
            "this trigger reads other DAGs' states: it runs in `tradewind triggerer` only"
        )
    return _cross_dag
