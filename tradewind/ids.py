"""What a DAG id, a task id and a run id may be: Airflow's rules, so ids are safe as folder names.

A try's log lives under ``logs/<dag_id>/<run_id>/<task_id>/``: an id holding ``/`` would be
unreachable through the API's paths, and ``..`` would write into another DAG's folder. DAG and
task ids follow Airflow's key rule (letters, digits, ``_``, ``.`` and ``-``, at most 250,
never dots only); a run id follows Airflow's default ``allowed_run_id_pattern`` plus the
characters Tradewind's own partitioned runs use (``@ , = %``). Without ``/``, only an id made
of dots alone (``.``, ``..``) names a folder other than its own: those are refused too.
"""

from __future__ import annotations

import re

MAX_ID_LENGTH = 250
KEY_PATTERN = re.compile(r"[\w.-]+")
RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9_.~:+@,=%-]+")


class InvalidId(ValueError):
    """An id that breaks its pattern; the message names the id and the rule."""


def check_key(kind: str, value: object) -> str:
    """``value`` if it is a valid DAG or task id (``kind`` names which); ``InvalidId`` if not."""
    if not isinstance(value, str) or not value:
        raise InvalidId(f"{kind} must be a non-empty string, got {value!r}")
    return _checked(kind, value, KEY_PATTERN, "letters, digits, '_', '.' and '-'")


def check_run_id(run_id: str) -> str:
    """``run_id`` if it is a valid run id; ``InvalidId`` naming what is wrong if not."""
    if not run_id:
        raise InvalidId("a run id must not be empty")
    return _checked("run id", run_id, RUN_ID_PATTERN, "ASCII letters, digits and '_.~:+@,=%-'")


def _checked(kind: str, value: str, pattern: re.Pattern[str], allowed: str) -> str:
    if len(value) > MAX_ID_LENGTH:
        raise InvalidId(f"{kind} {value[:40]!r}... is over {MAX_ID_LENGTH} characters")
    if not pattern.fullmatch(value):
        raise InvalidId(f"{kind} {value!r} may hold only {allowed}")
    if not value.strip("."):
        raise InvalidId(f"{kind} {value!r} must not be dots only")
    return value


__all__ = ["MAX_ID_LENGTH", "InvalidId", "check_key", "check_run_id"]
