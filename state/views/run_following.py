"""What a client following runs to their end reads on each poll: a run's state, its task
instances counted by state and its iterable ones' items; when its next try is due; the states
of a set of runs.

The command line polls these (``dags trigger --wait``, ``standalone --run``, ``dags test``,
``dags backfill --wait``). A poll costs the store the same whatever the run's size: counts per
state rather than a row per task instance, and the DAG's version hash rather than its structure
(parsed once per version and kept). Watching a 2,000-task run read every row and the whole
structure twice a second: 12% of the run's rate on this machine (docs/benchmarks.md).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from state.core import DagModel, DagRun, TaskInstance, TaskSpec, structures_of
from state.views.progress import ItemsProgress, items_of_run, iterable_task_ids


@dataclass(frozen=True)
class RunPoll:
    """A run as one poll sees it: its state, how many task instances are in each state, and
    the items of its iterable task instances."""

    state: str
    counts: dict[str, int]
    items: list[ItemsProgress]


def poll_run(session: Session, dag_id: str, run_id: str) -> RunPoll:
    """The run's state, its task instances counted by state, its iterable ones' items."""
    run_state, version = session.execute(
        select(DagRun.state, DagModel.version_hash)
        .join(DagModel, DagModel.dag_id == DagRun.dag_id)
        .where(DagRun.dag_id == dag_id, DagRun.run_id == run_id)
    ).one()
    counts = session.execute(
        select(TaskInstance.state, func.count())
        .where(TaskInstance.dag_id == dag_id, TaskInstance.run_id == run_id)
        .group_by(TaskInstance.state)
    ).all()
    tasks = structures_of(session, {dag_id: version})[dag_id].tasks
    items = _iterable_items(session, dag_id, run_id, tasks)
    return RunPoll(str(run_state), {str(state): int(n) for state, n in counts}, items)


def _iterable_items(
    session: Session, dag_id: str, run_id: str, tasks: Mapping[str, TaskSpec]
) -> list[ItemsProgress]:
    iterable = iterable_task_ids(tasks)
    if not iterable:
        return []
    pairs = session.execute(
        select(TaskInstance.task_id, TaskInstance.map_index).where(
            TaskInstance.dag_id == dag_id,
            TaskInstance.run_id == run_id,
            TaskInstance.task_id.in_(iterable),
        )
    ).all()
    return list(items_of_run(session, dag_id, run_id, pairs, tasks).values())


@dataclass(frozen=True)
class TIWait:
    """A task instance's state, and when its retry or its sensor's next poke is due."""

    state: str
    next_retry_at: dt.datetime | None


def run_waits(session: Session, run_pk: int) -> tuple[str, list[TIWait]]:
    """The state of the run whose primary key is ``run_pk``, and its task instances' waits."""
    run = session.get(DagRun, run_pk)
    assert run is not None
    rows = session.execute(
        select(TaskInstance.state, TaskInstance.next_retry_at).where(
            TaskInstance.dag_id == run.dag_id, TaskInstance.run_id == run.run_id
        )
    )
    return str(run.state), [TIWait(str(state), at) for state, at in rows]


def run_states(session: Session, dag_id: str, run_ids: Collection[str]) -> dict[str, str]:
    """The state of each of the DAG's runs named in ``run_ids`` (a run not found is left out)."""
    rows = session.execute(
        select(DagRun.run_id, DagRun.state).where(
            DagRun.dag_id == dag_id, DagRun.run_id.in_(list(run_ids))
        )
    )
    return {run_id: str(state) for run_id, state in rows}
