"""Purging the objects of discarded state values, outside any task: for ``tradewind tasks clear``.

A clear discards a task instance's state (unless asked to keep it); with the object-storage
backend, the objects its rows refer to must go too, or they pile up unseen. Runs in the
clearing process, with Connections read straight from the SQL store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from state.core import TaskStateValue
from state.records import StoreLookups
from tradewind.settings import Settings
from worker.xcom.purge import purger_of


def state_purger(settings: Settings) -> Callable[[Sequence[TaskStateValue]], None] | None:
    """What ``clear_task_instances(purge_states=...)`` needs; None for the SQL backend.

    Build it before opening the clear's session: it may read a Connection, and SQLite lets one
    writer in at a time.
    """
    if settings.state_store_backend != "object_storage":
        return None
    from worker.state_store.object_storage import ObjectStorageStateBackend

    return purger_of(
        ObjectStorageStateBackend.from_settings(settings, StoreLookups(settings.sql_url))
    )
