"""Deferred tries and their triggers in the store (DESIGN.md §12).

A try that defers ends ``running -> deferred`` (no try consumed, its slot freed) and writes its
trigger's row in the same transaction (``add_trigger``, from ``state.engine.end.record_end``).
Triggerers then share the rows:

- ``claim_triggers``: the rows nobody holds, or whose holder stopped beating, are taken with
  ``FOR UPDATE SKIP LOCKED`` (several triggerers never take one row at once), up to a capacity.
  Each claim writes the claiming triggerer's token: that token fences everything it writes next.
- ``beat_triggers``: the holder's heartbeat over the rows it runs; it answers which rows it still
  holds, so a row taken over, cleared, marked or timed out is cancelled there.
- ``fire_trigger``: an event. Fenced by the token: a triggerer that lost the row (it stopped
  beating, another took it over) has its late event refused. The task instance goes
  ``deferred -> scheduled`` for the same try (the queue adds back the one taken here, as a
  sensor's next poke), with the event in ``next_kwargs``.
- ``time_out_deferrals``: a deferral whose timeout passed first fails its task instance.
- ``cancel_triggers``: a cleared or marked task instance's trigger is dropped.

An asset watcher's trigger (``ti_id`` None, ``watcher`` set) is claimed and beaten the same
way; its events record asset events instead (``state.engine.watchers``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, delete, exists, or_, select, update
from sqlalchemy.orm import Session

from state.core import (
    TI_TABLE,
    TRIGGER_TABLE,
    Increment,
    TaskInstanceState,
    transition_tis,
    utcnow,
)

if TYPE_CHECKING:
    from state.engine.outcomes import Deferred

TI = TaskInstanceState
_TRIGGER = TRIGGER_TABLE
_TI = TI_TABLE
# The same try resumes: queuing adds back the one taken here (as state/engine/scheduling.py's).
SAME_TRY = Increment(-1)


def _still_waited_on() -> Any:
    """The trigger row is a watcher's, or its try is still deferred (not cleared, not marked)."""
    deferred = exists().where(
        _TI.c.id == _TRIGGER.c.ti_id,
        _TI.c.state == TI.DEFERRED,
        _TI.c.try_number == _TRIGGER.c.try_number,
    )
    return or_(_TRIGGER.c.ti_id.is_(None), deferred)


@dataclass(frozen=True)
class ClaimedTrigger:
    """A trigger a triggerer now runs: what to build it from, and what it wakes."""

    id: int
    classpath: str
    kwargs: dict[str, Any]
    ti_id: int | None
    watcher: str | None


def add_trigger(
    session: Session, ti_id: int, try_number: int, deferred: Deferred, at: dt.datetime
) -> None:
    """The trigger row of a try that defers (written with the try's end: ``record_end``)."""
    timeout_at = (
        at + dt.timedelta(seconds=deferred.timeout_seconds)
        if deferred.timeout_seconds is not None
        else None
    )
    # An earlier deferral of the task instance that never fired is not waited on any more.
    cancel_triggers(session, [ti_id])
    session.execute(
        _TRIGGER.insert().values(
            classpath=deferred.classpath,
            kwargs=deferred.kwargs,
            ti_id=ti_id,
            try_number=try_number,
            timeout_at=timeout_at,
            created_at=at,
        )
    )


def claim_triggers(
    session: Session,
    triggerer_id: str,
    token: str,
    capacity: int,
    stale_before: dt.datetime,
    now: dt.datetime | None = None,
) -> list[ClaimedTrigger]:
    """Take up to ``capacity`` unfired triggers that nobody holds or whose holder stopped
    beating before ``stale_before``; rows another triggerer is claiming are skipped."""
    if capacity <= 0:
        return []
    now = now or utcnow()
    free = or_(_TRIGGER.c.claim_token.is_(None), _TRIGGER.c.heartbeat_at < stale_before)
    ids = (
        session.execute(
            select(_TRIGGER.c.id)
            .where(
                _TRIGGER.c.fired_at.is_(None),
                free,
                _TRIGGER.c.claim_token.is_distinct_from(token),
                _still_waited_on(),
            )
            .order_by(_TRIGGER.c.id)
            .limit(capacity)
            .with_for_update(skip_locked=True)
        )
        .scalars()
        .all()
    )
    if not ids:
        return []
    rows = session.execute(
        update(_TRIGGER)
        .where(_TRIGGER.c.id.in_(ids))
        .values(triggerer_id=triggerer_id, claim_token=token, heartbeat_at=now)
        .returning(
            _TRIGGER.c.id,
            _TRIGGER.c.classpath,
            _TRIGGER.c.kwargs,
            _TRIGGER.c.ti_id,
            _TRIGGER.c.watcher,
        )
    ).all()
    return sorted((ClaimedTrigger(*row) for row in rows), key=lambda t: t.id)


def beat_triggers(
    session: Session, token: str, ids: Collection[int], now: dt.datetime | None = None
) -> set[int]:
    """The heartbeat of the triggers ``token`` runs; the ids it still holds (unfired, not
    taken over, not dropped by a clear or a mark)."""
    if not ids:
        return set()
    rows = session.execute(
        update(_TRIGGER)
        .where(
            _TRIGGER.c.id.in_(list(ids)),
            _TRIGGER.c.claim_token == token,
            _TRIGGER.c.fired_at.is_(None),
            _still_waited_on(),
        )
        .values(heartbeat_at=now or utcnow())
        .returning(_TRIGGER.c.id)
    ).all()
    return {row.id for row in rows}


def release_triggers(session: Session, token: str) -> int:
    """A triggerer stopping: its rows are free for another at once, not after the threshold."""
    result = session.execute(
        update(_TRIGGER)
        .where(_TRIGGER.c.claim_token == token, _TRIGGER.c.fired_at.is_(None))
        .values(claim_token=None, triggerer_id=None, heartbeat_at=None)
    )
    return int(getattr(result, "rowcount", 0) or 0)


@dataclass(frozen=True)
class Fired:
    """What an event did: ``accepted`` False when the trigger was no longer the sender's."""

    accepted: bool
    resumed: bool = False


def fire_trigger(
    session: Session, trigger_id: int, token: str, payload: Any, now: dt.datetime | None = None
) -> Fired:
    """Record a trigger's event, fenced by ``token``. A deferred try's: its task instance goes
    back to ``scheduled`` for the same try with the event added to ``next_kwargs``. An asset
    watcher's: an event of its asset (``state.engine.watchers``), the trigger running on."""
    now = now or utcnow()
    held = session.execute(
        select(_TRIGGER.c.ti_id, _TRIGGER.c.try_number, _TRIGGER.c.watcher)
        .where(
            _TRIGGER.c.id == trigger_id,
            _TRIGGER.c.claim_token == token,
            _TRIGGER.c.fired_at.is_(None),
        )
        .with_for_update()
    ).first()
    if held is None:
        return Fired(False)
    if held.watcher is not None:
        from state.engine.watchers import record_watcher_event

        record_watcher_event(session, held.watcher, payload, now)
        return Fired(True)
    session.execute(
        update(_TRIGGER).where(_TRIGGER.c.id == trigger_id).values(fired_at=now, event=payload)
    )
    if held.ti_id is None:
        return Fired(True)
    return Fired(True, resume_waiting(session, held.ti_id, held.try_number, TI.DEFERRED, payload))


def resume_waiting(
    session: Session, ti_id: int, try_number: int, waiting: TaskInstanceState, event: Any
) -> bool:
    """``waiting -> scheduled`` for the same try, with ``event`` added to the ``next_kwargs`` of
    the method it resumes in (a trigger's event, a person's answer); False when the task
    instance no longer waits there."""
    current = session.execute(
        select(_TI.c.next_kwargs).where(_TI.c.id == ti_id, _TI.c.state == waiting)
    ).first()
    if current is None:
        return False
    kwargs = {**(current.next_kwargs or {}), "event": event}
    moved = transition_tis(
        session,
        [ti_id],
        [waiting],
        TI.SCHEDULED,
        {"next_kwargs": kwargs, "try_number": SAME_TRY, "end_date": None},
        try_number=try_number,
    )
    return moved == 1


@dataclass(frozen=True)
class TimedOut:
    """A deferral failed by its timeout."""

    ti_id: int
    dag_id: str
    run_id: str
    task_id: str
    error: str


def time_out_deferrals(session: Session, now: dt.datetime | None = None) -> list[TimedOut]:
    """Fail the deferred task instances whose deferral's timeout passed before its event."""
    now = now or utcnow()
    due = session.execute(
        select(_TRIGGER.c.id, _TRIGGER.c.ti_id, _TRIGGER.c.try_number, _TRIGGER.c.created_at)
        .where(
            _TRIGGER.c.fired_at.is_(None),
            _TRIGGER.c.ti_id.is_not(None),
            _TRIGGER.c.timeout_at < now,
        )
        .with_for_update(skip_locked=True)
    ).all()
    failed: list[TimedOut] = []
    for trigger in due:
        session.execute(
            update(_TRIGGER)
            .where(_TRIGGER.c.id == trigger.id)
            .values(fired_at=now, event={"timeout": True})
        )
        ti = session.execute(
            select(_TI.c.dag_id, _TI.c.run_id, _TI.c.task_id, _TI.c.start_date).where(
                _TI.c.id == trigger.ti_id
            )
        ).first()
        waited = (now - trigger.created_at).total_seconds()
        error = f"deferral timed out: no trigger event within its timeout ({waited:.0f}s waited)"
        values = {"error": error, "end_date": now, "next_method": None, "next_kwargs": None}
        moved = transition_tis(
            session,
            [trigger.ti_id],
            [TI.DEFERRED],
            TI.FAILED,
            values,
            try_number=trigger.try_number,
        )
        if moved and ti is not None:
            failed.append(TimedOut(trigger.ti_id, ti.dag_id, ti.run_id, ti.task_id, error))
    return failed


def drop_stale_triggers(session: Session) -> int:
    """Drop the unfired triggers of tries no longer deferred (marked, removed, cleared by a
    path that did not drop them): nobody waits on them."""
    result = session.execute(
        delete(_TRIGGER).where(_TRIGGER.c.fired_at.is_(None), ~_still_waited_on())
    )
    return int(getattr(result, "rowcount", 0) or 0)


def cancel_triggers(session: Session, ti_ids: Sequence[int] | Collection[int]) -> int:
    """Drop the unfired triggers of ``ti_ids`` (cleared, marked, deferred anew): the triggerer
    running one finds it gone at its next beat and cancels it."""
    if not ti_ids:
        return 0
    result = session.execute(
        delete(_TRIGGER).where(
            and_(_TRIGGER.c.ti_id.in_(list(ti_ids)), _TRIGGER.c.fired_at.is_(None))
        )
    )
    return int(getattr(result, "rowcount", 0) or 0)


def deferred_triggers(session: Session, ti_ids: Collection[int]) -> dict[int, dict[str, Any]]:
    """The waiting trigger of each of ``ti_ids`` that has one (for views: what it waits on)."""
    if not ti_ids:
        return {}
    rows = session.execute(
        select(
            _TRIGGER.c.ti_id,
            _TRIGGER.c.classpath,
            _TRIGGER.c.triggerer_id,
            _TRIGGER.c.timeout_at,
            _TRIGGER.c.created_at,
        ).where(_TRIGGER.c.ti_id.in_(list(ti_ids)), _TRIGGER.c.fired_at.is_(None))
    ).all()
    return {
        row.ti_id: {
            "classpath": row.classpath,
            "triggerer_id": row.triggerer_id,
            "timeout_at": row.timeout_at,
            "created_at": row.created_at,
        }
        for row in rows
    }


@dataclass(frozen=True)
class TriggerOutcome:
    """What one of a triggerer's triggers came to: an event's ``payload``, or an ``error``
    (the trigger raised, or could not be built)."""

    trigger_id: int
    payload: Any = None
    error: str | None = None


def fire_triggers(
    session: Session, token: str, outcomes: Sequence[TriggerOutcome], now: dt.datetime | None = None
) -> tuple[int, int]:
    """Record a triggerer's outcomes in one transaction, each fenced by ``token``; returns
    (tries resumed or failed, outcomes refused). The schedulers are woken when one resumed."""
    now = now or utcnow()
    moved = refused = 0
    for outcome in outcomes:
        if outcome.error is None:
            fired = fire_trigger(session, outcome.trigger_id, token, outcome.payload, now)
        else:
            fired = fail_trigger(session, outcome.trigger_id, token, outcome.error, now)
        refused += not fired.accepted
        moved += fired.resumed
    if moved:
        from state.engine.run_wake import notify_run_created

        notify_run_created(session)  # a resumed try is queued by the next pass: start it now
    return moved, refused


def fail_trigger(
    session: Session, trigger_id: int, token: str, error: str, now: dt.datetime | None = None
) -> Fired:
    """A deferred try's trigger failed: its task instance fails with ``error`` (one line),
    fenced by ``token`` as an event is."""
    now = now or utcnow()
    row = session.execute(
        update(_TRIGGER)
        .where(
            _TRIGGER.c.id == trigger_id,
            _TRIGGER.c.claim_token == token,
            _TRIGGER.c.fired_at.is_(None),
        )
        .values(fired_at=now, event={"error": error})
        .returning(_TRIGGER.c.ti_id, _TRIGGER.c.try_number)
    ).first()
    if row is None:
        return Fired(False)
    if row.ti_id is None:  # a watcher's trigger failed: free for a triggerer to start again
        session.execute(
            update(_TRIGGER)
            .where(_TRIGGER.c.id == trigger_id)
            .values(fired_at=None, event=None, claim_token=None, triggerer_id=None)
        )
        return Fired(True)
    values = {"error": error, "end_date": now, "next_method": None, "next_kwargs": None}
    moved = transition_tis(
        session, [row.ti_id], [TI.DEFERRED], TI.FAILED, values, try_number=row.try_number
    )
    return Fired(True, moved == 1)
