"""``macros`` in a task's context and templates, as Airflow's: ``{{ macros.ds_add(ds, 7) }}``.

The helpers (``ds_add``, ``ds_format``, ``datetime_diff_for_humans``) and what Airflow exposes
under the same names: the ``datetime`` and ``timedelta`` classes, the ``dateutil``, ``json``,
``time`` and ``uuid`` modules, and ``random`` (the function, ``random.random``). Everything
here is cheap to import: it is loaded once, before tasks fork.
"""

from __future__ import annotations

import datetime as _dt
import json
import time
import uuid
from datetime import timedelta
from random import random  # the function, as Airflow's macros.random

# Its submodules (parser, relativedelta, tz) load on first use: dateutil imports them lazily.
import dateutil

datetime = _dt.datetime

__all__ = [
    "datetime",
    "datetime_diff_for_humans",
    "dateutil",
    "ds_add",
    "ds_format",
    "json",
    "random",
    "time",
    "timedelta",
    "uuid",
]


def ds_add(ds: str, days: int) -> str:
    """``YYYY-MM-DD`` moved by ``days`` (negative goes back): ``ds_add("2015-01-01", 5)``."""
    if not days:
        return str(ds)
    moved = _dt.datetime.strptime(str(ds), "%Y-%m-%d") + timedelta(days=days)
    return moved.strftime("%Y-%m-%d")


def ds_format(ds: str, input_format: str, output_format: str) -> str:
    """``ds`` read with ``input_format`` and written with ``output_format``."""
    return _dt.datetime.strptime(str(ds), input_format).strftime(output_format)


_UNITS = (
    ("year", 365 * 86400),
    ("month", 30 * 86400),
    ("week", 7 * 86400),
    ("day", 86400),
    ("hour", 3600),
    ("minute", 60),
    ("second", 1),
)


def datetime_diff_for_humans(dt: _dt.datetime, since: _dt.datetime | None = None) -> str:
    """How far ``dt`` is from ``since`` (now when None) in words: ``"3 days ago"``,
    ``"in 2 hours"``, ``"3 days after"`` when ``since`` is given (as Airflow's pendulum does)."""
    reference = since or _dt.datetime.now(dt.tzinfo or None)
    seconds = (dt - reference).total_seconds()
    count, unit = next(
        ((int(abs(seconds) // size), name) for name, size in _UNITS if abs(seconds) >= size),
        (int(abs(seconds)), "second"),
    )
    amount = f"{count} {unit}{'s' if count != 1 else ''}"
    if since is not None:
        return f"{amount} {'after' if seconds >= 0 else 'before'}"
    return f"in {amount}" if seconds >= 0 else f"{amount} ago"
