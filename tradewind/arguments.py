"""Arguments Airflow accepts that Tradewind does not: refused at import, with one line each.

A DAG file written for Airflow must never run with an argument silently dropped, so every
``DAG(...)``, ``@dag``, ``@task``, operator and ``default_args`` key that is not implemented
fails the file's import naming it, and why where it helps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tradewind.exceptions import DagDefinitionError

#: Names Airflow 3 itself no longer accepts.
REMOVED_IN_AIRFLOW_3 = {
    "sla": "Airflow 3 removed SLAs",
    "sla_miss_callback": "Airflow 3 removed SLAs",
}

#: Accepted only at their default: anything else needs the scheduler to do what they ask.
DEFAULT_ONLY: dict[str, tuple[Any, str]] = {
    "deferrable": (
        False,
        "only an operator that can wait on the triggerer takes it: set it on that operator",
    ),
}


def refuse_unsupported(where: str, arguments: Mapping[str, Any]) -> None:
    """Raise for the first argument of ``arguments`` (those left over) that is not supported."""
    for name in arguments:
        reason = REMOVED_IN_AIRFLOW_3.get(name)
        suffix = f" ({reason})" if reason else ""
        raise DagDefinitionError(f"{where}: argument {name!r} is not supported{suffix}")


def take_default_only(where: str, arguments: dict[str, Any]) -> None:
    """Remove the default-only arguments from ``arguments``; refuse one set to anything else."""
    for name, (default, reason) in DEFAULT_ONLY.items():
        if name in arguments and arguments.pop(name) != default:
            raise DagDefinitionError(f"{where}: {name} is not supported ({reason})")
