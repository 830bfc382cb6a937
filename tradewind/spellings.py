"""Airflow 2 spellings Tradewind accepts beyond Airflow 3, each named once per DAG file.

Airflow 3 refuses the Airflow 2 names most public DAG folders still use (``schedule_interval``,
``DummyOperator``, ``Dataset``, ``execution_date``...). Tradewind takes them, and says which
Airflow 3 spelling to use: ``airflow2_spelling`` notes one. While the loader
(``tradewind/loader.py``) imports a DAG file, the notes go to that file's report (one line per
file, listed by ``tradewind dags check``); a context variable holds the report, so loaders on
several threads keep theirs apart. Outside a load, a note is an ``Airflow2Spelling`` warning.
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings
from collections.abc import Iterator


class Airflow2Spelling(UserWarning):
    """An Airflow 2 name a DAG file used; the message names the Airflow 3 one."""


_NOTES: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "airflow2_spellings", default=None
)


def airflow2_spelling(old: str, new: str) -> None:
    """Note that the DAG file being loaded said ``old`` where Airflow 3 says ``new``."""
    note = f"{old} (Airflow 3: {new})"
    notes = _NOTES.get()
    if notes is None:
        warnings.warn(note, Airflow2Spelling, stacklevel=3)
    elif note not in notes:
        notes.append(note)


@contextlib.contextmanager
def noting_spellings() -> Iterator[list[str]]:
    """Gather the notes made inside the block, in order, each once."""
    notes: list[str] = []
    token = _NOTES.set(notes)
    try:
        yield notes
    finally:
        _NOTES.reset(token)


def spelling_line(notes: list[str]) -> str:
    """A file's notes as its one warning line."""
    return "Airflow 2 spellings: " + "; ".join(notes)
