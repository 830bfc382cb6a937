"""Purging what cleared XComs refer to, outside any task: for ``tradewind tasks clear``.

A clear deletes XCom rows; with a backend that keeps values elsewhere, their objects must go
too, or they pile up unseen. The purger runs in the clearing process (the CLI), with
Connections read straight from the SQL store.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Protocol

from state.core import XCom
from state.records import StoreLookups
from tradewind.settings import Settings
from worker.xcom.base import XComAddress, XComBackend
from worker.xcom.configured import backend_class, runs_in_helper


class StoredRow(Protocol):
    """A deleted row that may refer to an object: an XCom, or a state value."""

    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    key: str
    value: str


def xcom_purger(settings: Settings) -> Callable[[Sequence[XCom]], None] | None:
    """What ``clear_task_instances(purge_xcoms=...)`` needs; None for the SQL backend.

    Build it before opening the clear's session: it may read a Connection, and SQLite lets one
    writer in at a time.
    """
    cls = backend_class(settings.xcom_backend)
    if not runs_in_helper(cls):
        return None
    return purger_of(cls.from_settings(settings, StoreLookups(settings.sql_url)))


def purger_of(backend: XComBackend) -> Callable[[Sequence[StoredRow]], None]:
    """Purge the objects of deleted rows (XComs, or state values) with ``backend``."""

    def purge(rows: Sequence[StoredRow]) -> None:
        for row in rows:
            where = XComAddress(row.dag_id, row.run_id, row.task_id, row.map_index, row.key)
            backend.purge(where, json.loads(row.value))

    return purge
