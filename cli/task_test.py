"""``tradewind tasks test DAG_ID TASK_ID``: one task run here, whatever its upstream tasks did.

As ``airflow tasks test``: no dependency is checked and nothing else of the DAG runs. The try
runs through the worker's own path (claim, fork, supervise, record) in a ``test`` run of its
own whose other tasks are marked ``removed``, so no scheduler ever runs them; the upstream
results the task asks for are therefore missing (``None``). One try only: retries are not
waited for.
"""

from __future__ import annotations

import logging
from getpass import getuser
from typing import Any

from broker_config import message_of
from cli.common import fail, setup_logging
from cli.inline import TriggeredRuns, print_try_log, try_error
from cli.render import make_console, state_text
from cli.store import check_conf, open_store, sync_folder
from state.core import (
    DagRunState,
    TaskInstanceState,
    session_scope,
    structure_of,
    transition_run,
    utcnow,
)
from state.engine import Enqueue, RunExists, UnknownDag, create_run, queue_task_alone
from state.views import get_dag
from tradewind.settings import Settings
from worker.supervisor.execute import execute

TI = TaskInstanceState


def test_task(settings: Settings, dag_id: str, task_id: str, conf: dict[str, Any]) -> str:
    """Run ``task_id`` once in a new test run; returns the state its try ended in."""
    setup_logging(logging.WARNING)
    url = open_store(settings)
    sync_folder(settings, url)
    queued, run_pk = queue_alone(url, dag_id, task_id, conf)
    console = make_console()
    console.print(f"testing {dag_id}.{task_id} in run {queued.run_id} (no upstream, no broker)")
    # A run the task triggers is driven here too: a trigger waiting for it must see it end.
    with TriggeredRuns(settings, url, console, logs=True):
        state = str(execute(message_of(queued), settings, publish=lambda _: None))
    line = state_text(state)
    error = try_error(url=settings.sql_url, ti_id=queued.ti_id)
    console.print(f"{task_id} try {queued.try_number}: ", line, f"  {error}" if error else "")
    print_try_log(settings, queued, console)
    end_run(url, run_pk, state)
    return state


def queue_alone(url: str, dag_id: str, task_id: str, conf: dict[str, Any]) -> tuple[Enqueue, int]:
    """A test run where only ``task_id`` is left, its first try queued."""
    with session_scope(url) as session:
        model = get_dag(session, dag_id, with_structure=True)
        spec = structure_of(model).tasks.get(task_id) if model is not None else None
        if model is not None and spec is None:
            fail(f"DAG {dag_id!r} has no task {task_id!r}")
        if spec is not None and spec.mapping is not None:
            fail(f"{dag_id}.{task_id} is a mapped task: tasks test runs unmapped tasks only")
        check_conf(session, dag_id, conf)
        try:
            run = create_run(session, dag_id, conf=conf, run_type="test", user=getuser())
        except (UnknownDag, RunExists) as error:
            fail(str(error))
        session.flush()
        return queue_task_alone(session, run, task_id), run.id


def end_run(url: str, run_pk: int, state: str) -> None:
    """The run ends as its one try did (a try up for retry counts as failed here)."""
    target = DagRunState.SUCCESS if state in (TI.SUCCESS, TI.SKIPPED) else DagRunState.FAILED
    with session_scope(url) as session:
        transition_run(session, run_pk, [DagRunState.RUNNING], target, {"end_date": utcnow()})
