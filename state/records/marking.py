"""What a person does to runs and task instances from the API or the UI: mark, requeue, delete.

Marks go through ``state.core.transitions.mark_tis`` / ``mark_run`` (their own transition table).
A mark that changes a task instance of a run that had ended sends the run back to ``queued``,
so the scheduler settles it again from its task instances, as a clear does.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Sequence

from sqlalchemy import Delete, delete, select
from sqlalchemy.orm import Session

from state.core import (
    FINISHED,
    WAITING_FOR_TIME,
    DagRun,
    DagRunState,
    TaskInstance,
    TaskInstanceHistory,
    TaskInstanceState,
    TaskStateValue,
    XCom,
    mark_run,
    mark_tis,
    utcnow,
)
from state.records.values import TIKey, delete_returning_objects, refers_to_object

TI = TaskInstanceState
RUN = DagRunState
_UNFINISHED = [state for state in TI if state not in FINISHED]
_ENDED = (RUN.SUCCESS, RUN.FAILED)


class BadMark(ValueError):
    """A state a run or a task instance cannot be marked as."""


def mark_task_instances(
    session: Session, run: DagRun, tis: Collection[TaskInstance], state: TaskInstanceState
) -> list[int]:
    """Mark ``tis`` (of ``run``) as ``state``; returns the ids of those that moved."""
    if state not in (TI.SUCCESS, TI.FAILED, TI.SKIPPED):
        raise BadMark(f"a task instance can be marked success, failed or skipped, not {state}")
    moved = []
    now = utcnow()
    for ti in tis:
        if ti.state in (state, TI.REMOVED):
            continue
        values = {"end_date": now, "next_retry_at": None}
        if mark_tis(session, [ti.id], [TI(ti.state)], state, values):
            moved.append(ti.id)
    if moved and run.state in _ENDED:
        mark_run(session, run.id, [RUN(run.state)], RUN.QUEUED, {"end_date": None})
    return moved


def mark_run_state(session: Session, run: DagRun, state: DagRunState) -> None:
    """Mark a run: success marks its unfinished tasks success; failed fails the running ones
    and skips those not started; queued hands it back to the scheduler as it is."""
    if state == run.state:
        return
    if state == RUN.SUCCESS:
        _mark_unfinished(session, run, _UNFINISHED, TI.SUCCESS)
    elif state == RUN.FAILED:
        _mark_unfinished(session, run, [TI.RUNNING, TI.QUEUED], TI.FAILED)
        waiting = [TI.NONE, TI.SCHEDULED, TI.DEFERRED, TI.AWAITING_INPUT, *WAITING_FOR_TIME]
        _mark_unfinished(session, run, waiting, TI.SKIPPED)
    end = None if state == RUN.QUEUED else utcnow()
    mark_run(session, run.id, [RUN(run.state)], state, {"end_date": end})


def _mark_unfinished(
    session: Session, run: DagRun, states: Sequence[TaskInstanceState], to: TaskInstanceState
) -> None:
    query = select(TaskInstance.id, TaskInstance.state).where(
        TaskInstance.dag_id == run.dag_id,
        TaskInstance.run_id == run.run_id,
        TaskInstance.state.in_(list(states)),
    )
    by_state: dict[TaskInstanceState, list[int]] = {}
    for ti_id, ti_state in session.execute(query):
        by_state.setdefault(TI(ti_state), []).append(ti_id)
    for source, ids in by_state.items():
        if source != to:
            mark_tis(session, ids, [source], to, {"end_date": utcnow()})


def delete_run(
    session: Session,
    run: DagRun,
    purge_xcoms: Callable[[Sequence[XCom]], None] | None = None,
    purge_states: Callable[[Sequence[TaskStateValue]], None] | None = None,
) -> None:
    """Delete a run with its task instances and their earlier tries, XComs and state values
    (and their objects)."""
    of_run = (XCom.dag_id == run.dag_id, XCom.run_id == run.run_id)
    if purge_xcoms is not None and (rows := session.scalars(select(XCom).where(*of_run)).all()):
        purge_xcoms(rows)
    states = delete(TaskStateValue).where(
        TaskStateValue.dag_id == run.dag_id, TaskStateValue.run_id == run.run_id
    )
    _purge_state_objects(session, states, purge_states)
    session.execute(delete(XCom).where(*of_run))
    session.execute(
        delete(TaskInstance).where(
            TaskInstance.dag_id == run.dag_id, TaskInstance.run_id == run.run_id
        )
    )
    session.execute(
        delete(TaskInstanceHistory).where(
            TaskInstanceHistory.dag_id == run.dag_id, TaskInstanceHistory.run_id == run.run_id
        )
    )
    session.execute(delete(DagRun).where(DagRun.id == run.id))


def delete_state_values(
    session: Session,
    key: TIKey,
    keys: Collection[str] | None,
    purge_states: Callable[[Sequence[TaskStateValue]], None] | None = None,
) -> int:
    """Delete some state keys of a task instance (every key when ``keys`` is None)."""
    conditions = [
        TaskStateValue.dag_id == key.dag_id,
        TaskStateValue.run_id == key.run_id,
        TaskStateValue.task_id == key.task_id,
        TaskStateValue.map_index == key.map_index,
    ]
    if keys is not None:
        conditions.append(TaskStateValue.key.in_(list(keys)))
    count = len(session.scalars(select(TaskStateValue.id).where(*conditions)).all())
    _purge_state_objects(session, delete(TaskStateValue).where(*conditions), purge_states)
    return count


def _purge_state_objects(
    session: Session,
    statement: Delete,
    purge_states: Callable[[Sequence[TaskStateValue]], None] | None,
) -> None:
    """Run the DELETE of state rows; those that referred to objects go to ``purge_states``."""
    if purge_states is not None and statement.whereclause is not None:
        query = select(TaskStateValue).where(statement.whereclause, refers_to_object())
        if referring := session.scalars(query).all():
            purge_states(referring)
    delete_returning_objects(session, statement)


def set_state_value(
    session: Session, key: TIKey, state_key: str, text: str, expires_at: dt.datetime | None
) -> None:
    """A person's write of one state key (the API's ``PUT``): not a try's, so not fenced.

    A running try that later writes the same key wins, as the last writer does.
    """
    session.execute(
        delete(TaskStateValue).where(
            TaskStateValue.dag_id == key.dag_id,
            TaskStateValue.run_id == key.run_id,
            TaskStateValue.task_id == key.task_id,
            TaskStateValue.map_index == key.map_index,
            TaskStateValue.key == state_key,
        )
    )
    session.add(
        TaskStateValue(
            **key.__dict__, key=state_key, value=text, expires_at=expires_at, updated_at=utcnow()
        )
    )
