"""``depends_on_past`` and ``wait_for_downstream``: a task waits for its previous run.

A task instance the trigger rules make ready stays ``none`` while the same task in the DAG's
previous run (the run with the latest logical date before this one's; under ``catchup``, manual
runs aside) is not all ``success`` or ``skipped``, or has no task instance at all; with
``wait_for_downstream``, also while a task instance of that task's direct downstream in the
previous run is not. The first run of a DAG, the first run of a backfill (by logical date)
and a run without a logical date wait for nothing. A previous try cleared, removed or failed
holds the task, as in Airflow, until it is run again or marked; so does a previous run without
the task (added to the DAG since), unless ``ignore_first_depends_on_past`` and no earlier run has
it either.

Nothing in the waiting run changes when the previous run moves on, so its task counts cannot
tell the scheduler's loop to look again (``scheduler/run_watch.py``): the runs a pass in this
process held are remembered (``waits_on_past``) and passed over at every loop until released.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from state.core import BackfillDagRun, DagRun, DagStructure, TaskInstance, TaskInstanceState
from state.engine.backfills import BACKFILL

TI = TaskInstanceState
_DONE_IN_PAST = frozenset({TI.SUCCESS, TI.SKIPPED})
#: Run pks whose last pass in this process held a task instance for the previous run.
_HELD: set[int] = set()


def waits_on_past(run_pk: int) -> bool:
    """Whether the last pass over ``run_pk`` in this process held a task for its past."""
    return run_pk in _HELD


def hold_for_past(
    session: Session, run: DagRun, structure: DagStructure, rows: Any, ready: list[int]
) -> list[int]:
    """``ready`` (task instance ids the trigger rules made ready) less those that wait for the
    previous run; ``rows``: the run's task instances (``id``, ``task_id``)."""
    if not ready or not _any_depends_on_past(structure):
        _HELD.discard(run.id)
        return ready
    tasks = structure.tasks
    task_of = {row.id: row.task_id for row in rows}
    asking = {task_of[ti_id] for ti_id in ready if tasks[task_of[ti_id]].depends_on_past}
    held = tasks_held(session, run, structure, asking) if asking else set()
    if held:
        _HELD.add(run.id)
    else:
        _HELD.discard(run.id)
    return [ti_id for ti_id in ready if task_of[ti_id] not in held]


def _any_depends_on_past(structure: DagStructure) -> bool:
    """Whether a task of the DAG waits on its past (kept with the structure: most never do)."""
    if "depends_on_past" not in structure.memo:
        specs = structure.tasks.values()
        structure.memo["depends_on_past"] = any(spec.depends_on_past for spec in specs)
    return bool(structure.memo["depends_on_past"])


def tasks_held(
    session: Session, run: DagRun, structure: DagStructure, task_ids: Collection[str]
) -> set[str]:
    """Those of ``task_ids`` (tasks with ``depends_on_past``) whose previous run holds them."""
    previous = previous_run_id(session, run, structure.catchup)
    if previous is None or _first_of_backfill(session, run):
        return set()  # the first run of its DAG, or of its backfill
    tasks = structure.tasks
    needed = set(task_ids)
    for task_id in task_ids:
        if tasks[task_id].wait_for_downstream:
            needed.update(tasks[task_id].downstream)
    states = _states_in(session, run.dag_id, previous, needed)
    held = {task_id for task_id in task_ids if _held(tasks, task_id, states)}
    return held - _never_run_before(session, run, structure, held - states.keys())


def _never_run_before(
    session: Session, run: DagRun, structure: DagStructure, absent: Collection[str]
) -> set[str]:
    """Those of ``absent`` (no task instance in the previous run) with
    ``ignore_first_depends_on_past`` that have none in any earlier run either: new to the DAG."""
    asking = [
        task_id for task_id in absent if structure.tasks[task_id].ignore_first_depends_on_past
    ]
    if not asking:
        return set()
    seen = session.scalars(
        select(TaskInstance.task_id)
        .join(
            DagRun, (DagRun.dag_id == TaskInstance.dag_id) & (DagRun.run_id == TaskInstance.run_id)
        )
        .where(
            TaskInstance.dag_id == run.dag_id,
            TaskInstance.task_id.in_(asking),
            DagRun.logical_date < run.logical_date,
        )
        .distinct()
    )
    return set(asking) - set(seen)


def _held(tasks: Mapping[str, Any], task_id: str, states: Mapping[str, list[TI]]) -> bool:
    own = states.get(task_id)
    if not own or not _DONE_IN_PAST.issuperset(own):
        return True  # not run yet in the previous run, or not successful there
    if not tasks[task_id].wait_for_downstream:
        return False
    # A downstream task with no task instance then does not hold it (as in Airflow).
    return any(
        not _DONE_IN_PAST.issuperset(states.get(child, ())) for child in tasks[task_id].downstream
    )


def previous_run_id(session: Session, run: DagRun, catchup: bool) -> str | None:
    """The run id of the DAG's run before ``run`` by logical date; under ``catchup`` the
    previous scheduled (not manual) one, as Airflow orders them."""
    if run.logical_date is None:
        return None
    query = select(DagRun.run_id).where(
        DagRun.dag_id == run.dag_id, DagRun.logical_date < run.logical_date
    )
    if catchup:
        query = query.where(DagRun.run_type != "manual")
    return session.scalar(query.order_by(DagRun.logical_date.desc()).limit(1))


def _first_of_backfill(session: Session, run: DagRun) -> bool:
    """Whether ``run`` is its backfill's earliest run (Airflow lets it run whatever came before)."""
    if run.run_type != BACKFILL:
        return False
    mine = select(BackfillDagRun.backfill_id).where(BackfillDagRun.dag_run_id == run.id)
    earliest = session.scalar(
        select(func.min(DagRun.logical_date))
        .join(BackfillDagRun, BackfillDagRun.dag_run_id == DagRun.id)
        .where(BackfillDagRun.backfill_id == mine.scalar_subquery())
    )
    return earliest is not None and earliest == run.logical_date


def _states_in(
    session: Session, dag_id: str, run_id: str, task_ids: Collection[str]
) -> dict[str, list[TI]]:
    rows = session.execute(
        select(TaskInstance.task_id, TaskInstance.state).where(
            TaskInstance.dag_id == dag_id,
            TaskInstance.run_id == run_id,
            TaskInstance.task_id.in_(list(task_ids)),
        )
    )
    states: dict[str, list[TI]] = {}
    for task_id, state in rows:
        states.setdefault(task_id, []).append(TI(state))
    return states
