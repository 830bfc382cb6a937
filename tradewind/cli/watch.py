"""Watching a run until it ends: poll its task-instance states from SQL, show them live.

Used by ``dags trigger --wait`` and ``standalone --run``. One query per poll reads every
state of the run, and two more the items of its iterable task instances (``state.progress``),
so watching costs the store the same whatever the DAG's size and its number of items.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console
from rich.live import Live
from sqlalchemy import select

from state.db import session_scope
from state.enums import DagRunState
from state.models import DagModel, DagRun, TaskInstance
from state.progress import ItemsProgress
from state.structure import structure_of
from tradewind.cli.render import RunProgress
from tradewind.cli.store import items_of

RUN_FINISHED = frozenset({DagRunState.SUCCESS, DagRunState.FAILED})
POLL_SECONDS = 0.5

#: Returns why watching cannot go on (a worker that died), or None while all is well.
Problem = Callable[[], str | None]


class WatchAborted(RuntimeError):
    """Watching stopped before the run ended; the message says why."""


def read_progress(url: str, dag_id: str, run_id: str) -> tuple[str, list[str], list[ItemsProgress]]:
    """The run's state, its task instances' states, and the items of its iterable ones."""
    with session_scope(url) as session:
        run_state = session.scalars(
            select(DagRun.state).filter_by(dag_id=dag_id, run_id=run_id)
        ).one()
        rows = session.execute(
            select(TaskInstance.task_id, TaskInstance.map_index, TaskInstance.state).filter_by(
                dag_id=dag_id, run_id=run_id
            )
        ).all()
        dag_model = session.get(DagModel, dag_id)
        tasks = structure_of(dag_model).tasks if dag_model else {}
        pairs = ((row.task_id, row.map_index) for row in rows)
        items = items_of(session, dag_id, run_id, pairs, tasks)
    return str(run_state), [str(row.state) for row in rows], list(items.values())


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
