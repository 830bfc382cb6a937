"""Watching a run until it ends: poll its task-instance states from SQL, show them live.

Used by ``dags trigger --wait`` and ``standalone --run``. A poll reads the run's state and
DAG version, its task instances counted by state, and, if it has iterable task instances,
their items in three more (``state.progress``): watching costs the store the same whatever the
DAG's size and its number of items.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from rich.console import Console
from rich.live import Live
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from cli.render import RunProgress
from cli.store import is_iterable, items_of
from state.db import session_scope
from state.enums import DagRunState
from state.models import DagModel, DagRun, TaskInstance
from state.progress import ItemsProgress
from state.structure import TaskSpec, structures_of

RUN_FINISHED = frozenset({DagRunState.SUCCESS, DagRunState.FAILED})
POLL_SECONDS = 0.5

#: Returns why watching cannot go on (a worker that died), or None while all is well.
Problem = Callable[[], str | None]


class WatchAborted(RuntimeError):
    """Watching stopped before the run ended; the message says why."""


def read_progress(
    url: str, dag_id: str, run_id: str
) -> tuple[str, dict[str, int], list[ItemsProgress]]:
    """The run's state, how many of its task instances are in each state, and the items of its
    iterable ones.

    What a poll reads does not grow with the run: counts per state, not one row per task
    instance, and the DAG's version hash, not its structure (parsed once per version, kept).
    Watching a 2,000-task run read every row and the whole structure twice a second: 12% of the
    run's rate on this machine (docs/benchmarks.md).
    """
    with session_scope(url) as session:
        run_state, version = session.execute(
            select(DagRun.state, DagModel.version_hash)
            .join(DagModel, DagModel.dag_id == DagRun.dag_id)
            .where(DagRun.dag_id == dag_id, DagRun.run_id == run_id)
        ).one()
        counts = session.execute(
            select(TaskInstance.state, func.count())
            .filter_by(dag_id=dag_id, run_id=run_id)
            .group_by(TaskInstance.state)
        ).all()
        tasks = structures_of(session, {dag_id: version})[dag_id].tasks
        items = _iterable_items(session, dag_id, run_id, tasks)
    return str(run_state), {str(state): int(n) for state, n in counts}, items


def _iterable_items(
    session: Session, dag_id: str, run_id: str, tasks: Mapping[str, TaskSpec]
) -> list[ItemsProgress]:
    iterable = [task_id for task_id in tasks if is_iterable(tasks, task_id)]
    if not iterable:
        return []
    pairs = session.execute(
        select(TaskInstance.task_id, TaskInstance.map_index).where(
            TaskInstance.dag_id == dag_id,
            TaskInstance.run_id == run_id,
            TaskInstance.task_id.in_(iterable),
        )
    ).all()
    return list(items_of(session, dag_id, run_id, pairs, tasks).values())


def watch_run(
    url: str,
    dag_id: str,
    run_id: str,
    console: Console,
    problem: Problem | None = None,
) -> str:
    """Show the run's progress live until it ends; returns its final state.

    Raises ``WatchAborted`` when ``problem`` reports one (the run goes on without us).
    """
    view = RunProgress(dag_id, run_id)
    try:
        with Live(view, console=console, refresh_per_second=4) as live:
            return _poll_until_finished(url, view, live, problem)
    finally:
        if not console.is_terminal:
            # Piped, Live prints its last frame only, and without the final newline.
            console.line()


def _poll_until_finished(url: str, view: RunProgress, live: Live, problem: Problem | None) -> str:
    while True:
        run_state, states, items = read_progress(url, view.dag_id, view.run_id)
        view.update(run_state, states, items)
        live.refresh()
        if run_state in RUN_FINISHED:
            return run_state
        reason = problem() if problem else None
        if reason:
            raise WatchAborted(reason)
        time.sleep(POLL_SECONDS)
