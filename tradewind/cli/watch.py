"""Watching a run until it ends: poll its task-instance states from SQL, show them live.

Used by ``dags trigger --wait`` and ``standalone --run``. One query per poll reads every
state of the run, so watching costs the store the same whatever the DAG's size.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console
from rich.live import Live
from sqlalchemy import select

from state.db import session_scope
from state.enums import DagRunState
from state.models import DagRun, TaskInstance
from tradewind.cli.render import RunProgress

RUN_FINISHED = frozenset({DagRunState.SUCCESS, DagRunState.FAILED})
POLL_SECONDS = 0.5

#: Returns why watching cannot go on (a worker that died), or None while all is well.
Problem = Callable[[], str | None]


class WatchAborted(RuntimeError):
    """Watching stopped before the run ended; the message says why."""


def read_progress(url: str, dag_id: str, run_id: str) -> tuple[str, list[str]]:
    """The run's state and its task instances' states."""
    with session_scope(url) as session:
        run_state = session.scalars(
            select(DagRun.state).filter_by(dag_id=dag_id, run_id=run_id)
        ).one()
        states = session.scalars(
            select(TaskInstance.state).filter_by(dag_id=dag_id, run_id=run_id)
        ).all()
    return str(run_state), [str(state) for state in states]


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
        run_state, states = read_progress(url, view.dag_id, view.run_id)
        view.update(run_state, states)
        live.refresh()
        if run_state in RUN_FINISHED:
            return run_state
        reason = problem() if problem else None
        if reason:
            raise WatchAborted(reason)
        time.sleep(POLL_SECONDS)
