"""Every try of a task instance: the earlier ones kept in ``task_instance_history``.

A task instance's row holds its latest try; a try is copied to the history when it gives way
to another, in the transaction that makes it give way: its end judged ``up_for_retry`` (the
supervisor's record, or the zombie sweep's) and a clear (its task instance reset for a new
try). A success or a final failure is not copied: it stays the latest try until a clear. So a
task's ordinary end writes nothing more, and ``tries_of`` (history plus the row) is every try.

A copy is written once per try (the unique key, and ``NOT EXISTS``): a try cleared after it
was retried is not copied twice.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, replace

from sqlalchemy import String, Table, and_, exists, insert, literal, select
from sqlalchemy.orm import Session

from state.core import (
    FINISHED,
    TI_TABLE,
    TaskInstance,
    TaskInstanceHistory,
    TaskInstanceState,
)

TI = TaskInstanceState
_TI = TI_TABLE
_HISTORY: Table = TaskInstanceHistory.__table__  # type: ignore[assignment]
#: The columns a try's copy takes from its task instance as they are.
_COPIED = (
    "dag_id",
    "run_id",
    "task_id",
    "map_index",
    "try_number",
    "max_tries",
    "queue",
    "pool",
    "pool_slots",
    "priority_weight",
    "hostname",
    "pid",
    "queued_at",
    "start_date",
    "end_date",
    "error",
)
_KEY = ("dag_id", "run_id", "task_id", "map_index", "try_number")
#: States of a latest try that has not started yet.
_NOT_STARTED = {TI.NONE, TI.SCHEDULED, TI.QUEUED}
#: States of a try that has started (its times and host are its own).
_STARTED: set[str] = {
    *FINISHED,
    TI.RUNNING,
    TI.UP_FOR_RETRY,
    TI.UP_FOR_RESCHEDULE,
    TI.DEFERRED,
    TI.AWAITING_INPUT,
}


def history_state(state: str) -> str | None:
    """The state a try given way is kept with: its end if it ended, failed if it was cut short
    (running, waiting for a poke or a trigger), none if it never started (as Airflow keeps)."""
    if state in FINISHED:
        return state
    return str(TI.FAILED) if state in _STARTED else None


def keep_try(session: Session, ti_id: int, try_number: int, state: str | None) -> None:
    """Copy try ``try_number`` of task instance ``ti_id`` to the history as ``state`` (an
    INSERT from its row, in the caller's transaction), unless it is there already."""
    of_ti = and_(*(_HISTORY.c[name] == _TI.c[name] for name in _KEY))
    kept_as = literal(None if state is None else str(state), String).label("state")
    source = select(*(_TI.c[name] for name in _COPIED), kept_as).where(
        _TI.c.id == ti_id,
        _TI.c.try_number == try_number,
        _TI.c.try_number > 0,
        ~exists().where(of_ti),
    )
    session.execute(insert(_HISTORY).from_select([*_COPIED, "state"], source))


def cleared_try(ti: TaskInstance) -> dict[str, object] | None:
    """The copy of the try a clear is about to reset (``ti`` as read before the clear), to
    write with ``keep_cleared_try`` once the clear has moved it; None before a first try."""
    if ti.try_number < 1:
        return None
    copy: dict[str, object] = {name: getattr(ti, name) for name in _COPIED}
    copy["state"] = history_state(str(ti.state))
    if copy["state"] is None:  # queued, never started: the times are the try's before
        copy.update(start_date=None, end_date=None, hostname=None, pid=None, error=None)
    return copy


def keep_cleared_try(session: Session, copy: dict[str, object] | None) -> None:
    """Write ``cleared_try``'s copy, unless the history holds that try already (retried)."""
    if copy is None:
        return
    held = select(_HISTORY.c.id).where(*(_HISTORY.c[name] == copy[name] for name in _KEY))
    if session.execute(held).first() is None:
        session.execute(insert(_HISTORY).values(**copy))


@dataclass(frozen=True)
class TryView:
    """One try as the UI and the API show it."""

    try_number: int
    state: str | None
    start_date: dt.datetime | None
    end_date: dt.datetime | None
    hostname: str | None
    pid: int | None
    queued_at: dt.datetime | None
    error: str | None
    max_tries: int
    pool: str
    pool_slots: int
    queue: str
    priority_weight: int

    @property
    def duration(self) -> float | None:
        if self.start_date and self.end_date:
            return (self.end_date - self.start_date).total_seconds()
        return None


def tries_of(session: Session, ti: TaskInstance) -> list[TryView]:
    """Every try of ``ti``, first to last: the history's, then its row's own try (unless the
    history already holds that number: a try retried or cleared). One query."""
    rows: Sequence[TaskInstanceHistory] = session.scalars(
        select(TaskInstanceHistory)
        .where(
            TaskInstanceHistory.dag_id == ti.dag_id,
            TaskInstanceHistory.run_id == ti.run_id,
            TaskInstanceHistory.task_id == ti.task_id,
            TaskInstanceHistory.map_index == ti.map_index,
        )
        .order_by(TaskInstanceHistory.try_number)
    ).all()
    tries = [_view(row, row.state) for row in rows]
    kept = {row.try_number for row in rows}
    if ti.try_number > 0 and ti.try_number not in kept:
        latest = _view(ti, None if ti.state == TI.NONE else str(ti.state))
        if ti.state in _NOT_STARTED:  # queued: the row's times are still the try's before
            latest = replace(latest, start_date=None, end_date=None, hostname=None, pid=None)
            latest = replace(latest, error=None)
        tries.append(latest)
    return tries


def _view(row: TaskInstance | TaskInstanceHistory, state: str | None) -> TryView:
    return TryView(
        try_number=row.try_number,
        state=state,
        start_date=row.start_date,
        end_date=row.end_date,
        hostname=row.hostname,
        pid=row.pid,
        queued_at=row.queued_at,
        error=row.error,
        max_tries=row.max_tries,
        pool=row.pool,
        pool_slots=row.pool_slots,
        queue=row.queue,
        priority_weight=row.priority_weight,
    )
