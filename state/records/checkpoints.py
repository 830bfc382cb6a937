"""Checkpoints of iterable tasks in the state store: their key names, reads, and deletes.

An iterable task keeps its per-item outcomes as ordinary state-store rows of its task instance:
one row per round under ``_iterable_batch_<n>``, and a completion marker under
``_iterable_complete``. What the values mean (generation, outcomes, fingerprints) is the task
side's business (``worker/task_runner/checkpoints.py``); this module only knows the keys, so that:
- reading every checkpoint of a task instance is one query, whatever the number of items;
- the user's own keys and the checkpoint keys never touch: a user's ``clear()`` keeps the
  checkpoints, and a success deletes the batches without touching the user's keys.

Every key name of a checkpoint is built here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import ColumnElement, delete, not_, update
from sqlalchemy.orm import Session

from state.core import Fence, TaskInstance, TaskStateValue, assert_fence, statements_of, utcnow
from state.records.values import TIKey, delete_returning_objects, read_states_with_prefix

#: Every checkpoint key starts with this; a user's key may not (``TaskStateStore`` refuses it).
CHECKPOINT_PREFIX = "_iterable_"
BATCH_PREFIX = "_iterable_batch_"
MARKER_KEY = "_iterable_complete"


def batch_key(number: int) -> str:
    """The key of round ``number`` (0, 1, 2...)."""
    if number < 0:
        raise ValueError(f"checkpoint batch numbers start at 0, got {number}")
    return f"{BATCH_PREFIX}{number}"


def batch_number(key: str) -> int | None:
    """The round a key holds, or None for any other key."""
    digits = key.removeprefix(BATCH_PREFIX)
    if digits == key or not digits.isdigit():
        return None
    return int(digits)


@dataclass
class StoredCheckpoints:
    """The checkpoint rows of one task instance as JSON text: batches by number, the marker."""

    batches: dict[int, str] = field(default_factory=dict)
    marker: str | None = None


def read_checkpoints(session: Session, ti: TIKey) -> StoredCheckpoints:
    """Every checkpoint row of ``ti`` in ONE query (a retry's only store read)."""
    stored = StoredCheckpoints()
    for key, text in read_states_with_prefix(session, ti, CHECKPOINT_PREFIX).items():
        number = batch_number(key)
        if number is not None:
            stored.batches[number] = text
        elif key == MARKER_KEY:
            stored.marker = text
    return stored


def write_checkpoint(session: Session, fence: Fence, ti: TIKey, key: str, value: str) -> None:
    """One checkpoint row, fenced; on PostgreSQL one statement, with no wait for the WAL flush.

    A checkpoint lost to a crash of the database server costs what an unwritten round costs
    (its items run again on the next try, DESIGN.md §5 rule 7), while the items of a round wait
    for their write: a 16,194-item task writes 1,013 of them.
    """
    row = {**ti.__dict__, "key": key, "value": value, "updated_at": utcnow()}
    statements_of(session).write_checkpoint(session, fence, row)


def _rows_of(ti: TIKey) -> tuple[ColumnElement[bool], ...]:
    return (
        TaskStateValue.dag_id == ti.dag_id,
        TaskStateValue.run_id == ti.run_id,
        TaskStateValue.task_id == ti.task_id,
        TaskStateValue.map_index == ti.map_index,
    )


def delete_batches(session: Session, fence: Fence, ti: TIKey) -> dict[str, str]:
    """Delete the batches of ``ti`` (after its success); the marker and user keys stay.

    Returns the deleted rows that referred to objects, by key (``delete_returning_objects``).
    """
    assert_fence(session, fence)
    statement = delete(TaskStateValue).where(
        *_rows_of(ti), TaskStateValue.key.startswith(BATCH_PREFIX, autoescape=True)
    )
    return delete_returning_objects(session, statement)


def delete_user_states(
    session: Session, fence: Fence, ti: TIKey, suffix: str = ""
) -> dict[str, str]:
    """A user's ``clear()``: delete their keys (those ending in ``suffix``), never checkpoints.

    An item of an iterable task clears only its own keys (they end with its suffix); clearing
    the checkpoints from inside an item would make a retry run finished items again.
    """
    assert_fence(session, fence)
    statement = delete(TaskStateValue).where(
        *_rows_of(ti), not_(TaskStateValue.key.startswith(CHECKPOINT_PREFIX, autoescape=True))
    )
    if suffix:
        statement = statement.where(TaskStateValue.key.endswith(suffix, autoescape=True))
    return delete_returning_objects(session, statement)


def set_items_total(session: Session, fence: Fence, total: int) -> None:
    """Record how many items the running try of an iterable task has (for progress)."""
    assert_fence(session, fence)
    session.execute(
        update(TaskInstance)
        .where(TaskInstance.id == fence.ti_id)
        .values(items_total=total)
        .execution_options(synchronize_session=False)
    )
