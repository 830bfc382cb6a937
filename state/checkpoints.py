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

from sqlalchemy import (
    ColumnElement,
    Insert,
    bindparam,
    delete,
    func,
    not_,
    null,
    select,
    update,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

from state.enums import TaskInstanceState
from state.models import STATE_TABLE, TI_TABLE, TaskInstance, TaskStateValue, utcnow
from state.transitions import Fence, TryFenced, assert_fence
from state.upserts import insert_for
from state.values import TIKey, delete_returning_objects, read_states_with_prefix

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
    now = utcnow()
    if session.get_bind().dialect.name == "postgresql":
        # Parameter names that are not column names: an UPDATE takes those as values to SET.
        row = {**ti.__dict__, "key": key, "value": value}
        params = {f"row_{name}": v for name, v in row.items()}
        params.update(now=now, fence_ti=fence.ti_id, fence_try=fence.try_number)
        params["fence_token_"] = fence.token
        if session.execute(_FENCED_UPSERT, params).first() is None:  # the fence did not match
            raise TryFenced(
                f"try {fence.try_number} of task instance {fence.ti_id} no longer holds it"
            )
        return
    assert_fence(session, fence)
    row = {**ti.__dict__, "key": key, "value": value, "expires_at": None, "updated_at": now}
    statement = insert_for(session)(TaskStateValue).values(row)
    session.execute(
        statement.on_conflict_do_update(
            index_elements=_UNIQUE,
            set_={"value": value, "expires_at": None, "updated_at": now},
        )
    )


_UNIQUE = ["dag_id", "run_id", "task_id", "map_index", "key"]


def _fenced_upsert() -> Insert:
    """``assert_fence`` and the upsert as one PostgreSQL statement (built once).

    The fence is a data-modifying CTE: it takes the task instance's row lock and bumps its
    heartbeat, as ``assert_fence`` does, and the row is written only if it matched. Its
    RETURNING also turns off the wait for the WAL flush for this transaction alone.
    """
    ti, state = TI_TABLE, STATE_TABLE
    fence = (
        update(ti)
        .where(
            ti.c.id == bindparam("fence_ti"),
            ti.c.try_number == bindparam("fence_try"),
            ti.c.fence_token == bindparam("fence_token_"),
            ti.c.state == TaskInstanceState.RUNNING,
        )
        .values(last_heartbeat=bindparam("now"))
        .returning(func.set_config("synchronous_commit", "off", True).label("flush"))
        .cte("fence")
    )
    columns = [*_UNIQUE, "value", "updated_at"]
    row = select(*(bindparam(f"row_{name}", type_=state.c[name].type) for name in columns[:-1]))
    row = row.add_columns(bindparam("now", type_=state.c.updated_at.type)).select_from(fence)
    statement = postgresql.insert(state).from_select(columns, row)
    upsert = statement.on_conflict_do_update(
        index_elements=_UNIQUE,
        set_={
            "value": statement.excluded.value,
            "expires_at": null(),
            "updated_at": statement.excluded.updated_at,
        },
    )
    return upsert.returning(state.c.id)  # a row count does not survive the CTE here: a row does


_FENCED_UPSERT = _fenced_upsert()


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
