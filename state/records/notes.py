"""A person's note on a run or a task instance, kept with who wrote it last and when.

A note is plain text of at most ``MAX_NOTE_CHARS`` (Airflow's bound); an empty one removes it.
Writing one is an action like any other: the caller records it in the event log.
"""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.orm import Session

from state.core import DagRun, TaskInstance, utcnow

#: The longest note (Airflow's API bounds it the same).
MAX_NOTE_CHARS = 1000


class BadNote(ValueError):
    """A note longer than the bound."""


def _values(note: str, user: str | None) -> dict[str, object]:
    if len(note) > MAX_NOTE_CHARS:
        raise BadNote(f"a note holds at most {MAX_NOTE_CHARS} characters, not {len(note)}")
    text = note if note.strip() else None
    return {"note": text, "note_user": user if text else None, "note_updated_at": utcnow()}


def set_run_note(session: Session, run: DagRun, note: str, user: str | None) -> None:
    """Write (or, empty, remove) the note of ``run`` as ``user``."""
    session.execute(update(DagRun).where(DagRun.id == run.id).values(**_values(note, user)))
    session.refresh(run)


def set_ti_note(session: Session, ti: TaskInstance, note: str, user: str | None) -> None:
    """Write (or, empty, remove) the note of ``ti`` as ``user``."""
    values = _values(note, user)
    session.execute(update(TaskInstance).where(TaskInstance.id == ti.id).values(**values))
    session.refresh(ti)
