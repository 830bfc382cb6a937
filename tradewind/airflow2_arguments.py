"""DAG arguments Airflow 2 spelled differently: taken under their Airflow 3 names, each noted
(``tradewind/spellings.py``) so the file's report says what to write instead."""

from __future__ import annotations

from typing import Any

from tradewind.exceptions import DagDefinitionError
from tradewind.spellings import airflow2_spelling

#: Airflow 2's DAG argument -> Airflow 3's.
RENAMED = {
    "schedule_interval": "schedule",
    "timetable": "schedule",
    "concurrency": "max_active_tasks",
}


def take_airflow2_arguments(dag_id: str, given: dict[str, Any], other: dict[str, Any]) -> None:
    """Move each Airflow 2 argument of ``other`` to its Airflow 3 name in ``given``.

    ``given`` holds the arguments under Airflow 3's names as the call set them (None: not set).
    """
    for old, new in RENAMED.items():
        if old not in other:
            continue
        value = other.pop(old)
        if given.get(new) is not None:
            raise DagDefinitionError(f"DAG {dag_id}: both {old} and {new} are set (use {new})")
        airflow2_spelling(old, new)
        given[new] = value


def apply_defaults(function: Any) -> Any:
    """Airflow 2's operator ``__init__`` decorator: Airflow 3 (and Tradewind) apply
    ``default_args`` without it, so it returns ``function`` as it is."""
    return function
