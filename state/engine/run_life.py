"""A run's life as its DAG's options bound it: ``fail_fast``, ``dagrun_timeout``, ``end_date``.

Stopping a try is the store's part only: its task instance leaves ``running`` (through the
marks' table, as a person's mark of a run does), the try's fence no longer holds, and its
supervisor, at the next heartbeat, stops the task's process (``TryFenced``, DESIGN.md §7).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from state.core import (
    FINISHED,
    DagModel,
    DagRun,
    DagRunState,
    DagStructure,
    TaskInstance,
    TaskInstanceState,
    TaskSpec,
    mark_run,
    mark_tis,
    statements_of,
    structures_of,
)

log = logging.getLogger("tradewind.scheduler")
TI = TaskInstanceState
_UNFINISHED = tuple(state for state in TI if state not in FINISHED)


def stop_the_rest(
    session: Session,
    structure: DagStructure,
    rows: Any,
    states: dict[int, TaskInstanceState],
    now: dt.datetime,
) -> None:
    """``fail_fast``: once a task instance of the run has failed, its running tries fail (and
    are stopped) and every other unfinished one is skipped; teardowns are left to run."""
    if not any(state == TI.FAILED for state in states.values()):
        return
    tasks = structure.tasks
    by_state: dict[TaskInstanceState, list[int]] = {}
    for row in rows:
        spec = tasks.get(row.task_id)
        state = states[row.id]
        if spec is not None and not spec.is_teardown and state in _UNFINISHED:
            by_state.setdefault(state, []).append(row.id)
    for state, ids in by_state.items():
        target = TI.FAILED if state == TI.RUNNING else TI.SKIPPED
        if mark_tis(session, ids, [state], target, {"end_date": now}):
            states.update(dict.fromkeys(ids, target))


@dataclass(frozen=True)
class RunningRun:
    """A running run of a DAG with a ``dagrun_timeout``."""

    run_pk: int
    dag_id: str
    run_id: str
    started: dt.datetime


def timed_out_runs(session: Session, now: dt.datetime) -> list[RunningRun]:
    """The running runs of unpaused DAGs started longer ago than their ``dagrun_timeout``."""
    rows = session.execute(
        select(DagRun.id, DagRun.dag_id, DagRun.run_id, DagRun.start_date, DagModel.version_hash)
        .join(DagModel, DagModel.dag_id == DagRun.dag_id)
        .where(DagRun.state == DagRunState.RUNNING, DagModel.is_paused.is_(False))
    ).all()
    versions = {row.dag_id: row.version_hash for row in rows}
    timeouts = {
        dag_id: structure.dagrun_timeout_seconds
        for dag_id, structure in structures_of(session, versions).items()
        if structure.dagrun_timeout_seconds is not None
    }
    return [
        RunningRun(row.id, row.dag_id, row.run_id, row.start_date)
        for row in rows
        if row.dag_id in timeouts
        and row.start_date is not None
        and now - row.start_date > dt.timedelta(seconds=timeouts[row.dag_id])
    ]


def time_out_run(session: Session, run_pk: int, now: dt.datetime) -> bool:
    """Fail a run past its ``dagrun_timeout``, as Airflow does: every unfinished task instance
    is skipped (a running try is then stopped by its supervisor). False when another process
    holds the run, or it is no longer running."""
    locked = statements_of(session).try_lock_run(session, run_pk)
    if locked is None or locked[0].state != DagRunState.RUNNING:
        return False
    run = locked[0]
    rows = session.execute(
        select(TaskInstance.id, TaskInstance.state).where(
            TaskInstance.dag_id == run.dag_id,
            TaskInstance.run_id == run.run_id,
            TaskInstance.state.in_(_UNFINISHED),
        )
    ).all()
    by_state: dict[TaskInstanceState, list[int]] = {}
    for ti_id, state in rows:
        by_state.setdefault(TI(state), []).append(ti_id)
    for state, ids in by_state.items():
        mark_tis(session, ids, [state], TI.SKIPPED, {"end_date": now})
    mark_run(session, run.id, [DagRunState.RUNNING], DagRunState.FAILED, {"end_date": now})
    return True


def tasks_in_run(tasks: Mapping[str, TaskSpec], run: Any) -> dict[str, TaskSpec]:
    """The tasks that get a task instance in ``run``: not those whose ``end_date`` is before its
    logical date (Airflow creates none for them, except in a backfill's run; their downstream
    then sees nothing to wait for, as for a removed task)."""
    logical_date = run.logical_date
    if logical_date is None or run.run_type == "backfill":  # state.engine.backfills.BACKFILL
        return dict(tasks)
    return {
        task_id: spec
        for task_id, spec in tasks.items()
        if spec.end_date is None or logical_date <= dt.datetime.fromisoformat(spec.end_date)
    }
