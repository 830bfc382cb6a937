"""Watching a run until it ends: poll its task-instance states from SQL, show them live.

Used by ``dags trigger --wait`` and ``standalone --run``. A poll is ``state.views.run_following.
poll_run``: the run's state and DAG version, its task instances counted by state, and, if it has
iterable task instances, their items in three more (``state.views.progress``): watching costs the
store the same whatever the DAG's size and its number of items.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console
from rich.live import Live

from cli.render import RunProgress
from state.core import DagRunState, session_scope
from state.views import ItemsProgress, poll_run

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
    iterable ones (what a poll reads does not grow with the run: ``state.views.run_following``)."""
    with session_scope(url) as session:
        poll = poll_run(session, dag_id, run_id)
    return poll.state, poll.counts, poll.items


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
