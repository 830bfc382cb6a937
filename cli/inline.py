"""``tradewind dags test``: one DagRun driven to its end in this process, with no broker.

The same code paths as the fleet, minus Celery: ``schedule_run_by_pk`` queues what is ready,
and each queued try runs right here through the worker's ``execute`` (claim, fork, supervise,
record), whose downstream pass hands its newly queued tries back to us instead of a broker.
Retries wait in SQL as always; this loop sleeps until the next one is due.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from getpass import getuser
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from broker_config import message_of
from cli.common import EXIT_BAD_INPUT, fail, setup_logging
from cli.outcome import print_outcome
from cli.render import make_console, state_text
from cli.store import check_conf, first_line, open_store, sync_folder
from cli.watch import POLL_SECONDS, RUN_FINISHED
from state.core import (
    ACTIVE,
    WAITING_FOR_TIME,
    DagModel,
    DagRun,
    NotFound,
    TaskInstanceState,
    session_scope,
    utcnow,
)
from state.engine import (
    Enqueue,
    RunExists,
    UnknownDag,
    create_run,
    schedule_run_by_pk,
    time_out_questions,
)
from state.views import get_run, run_waits, task_instance_by_id, waiting_questions
from tradewind.ids import InvalidId
from tradewind.settings import Settings
from worker.supervisor.cross_dag_requests import RUN_CREATED_HOOKS
from worker.supervisor.execute import execute
from worker.supervisor.logs import log_path

if TYPE_CHECKING:
    from state.core import Session

WAITING = ACTIVE | {
    TaskInstanceState.SCHEDULED,
    TaskInstanceState.DEFERRED,
    # A person's answer (the UI or the API of a server on the same store), or its timeout.
    TaskInstanceState.AWAITING_INPUT,
}


def run_inline(
    settings: Settings, dag_id: str, conf: dict[str, Any], run_id: str | None, logs: bool
) -> str:
    """Create (or resume) a test run, run it here to its end, print a summary; its state."""
    setup_logging(logging.WARNING)
    url = open_store(settings)
    sync_folder(settings, url)
    run_pk, run_id = start_or_resume(url, dag_id, conf, run_id)
    console = make_console()
    console.print(f"testing {dag_id} run {run_id} in this process (no broker)")
    with TriggeredRuns(settings, url, console, logs), inline_triggerer(settings):
        state = drive(settings, url, run_pk, console, logs)
        print_outcome(console, url, dag_id, run_id)
    return state


@contextlib.contextmanager
def inline_triggerer(settings: Settings) -> Iterator[None]:
    """A triggerer on a thread of this process while the run is tested: a deferred task's
    trigger runs here and wakes it, as Airflow's ``dags test`` runs triggers in its process."""
    from triggerer import Triggerer

    stop = threading.Event()
    thread = threading.Thread(
        target=Triggerer(settings, claim_seconds=0.2).run_forever,
        args=(stop,),
        name="triggerer",
        daemon=True,
    )
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=30)


class TriggeredRuns:
    """The runs a task triggers (``TriggerDagRunOperator``), each driven here on a thread.

    No scheduler runs under ``dags test``: a triggered run nobody drove would stay queued, and a
    trigger waiting for its completion would wait forever. Each is driven to its end beside the
    tested run (the trigger may hold the main thread, polling), and awaited before the command
    ends, so no try of it is cut off.
    """

    def __init__(self, settings: Settings, url: str, console: Console, logs: bool) -> None:
        self._args = (settings, url, console, logs)
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> TriggeredRuns:
        RUN_CREATED_HOOKS.append(self.started)
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        RUN_CREATED_HOOKS.remove(self.started)
        if kind is None:
            for thread in self._threads:
                thread.join()

    def started(self, dag_id: str, run_id: str) -> None:
        """Drive the run ``run_id`` of ``dag_id``, just created (or cleared) by a task."""
        settings, url, console, logs = self._args
        with session_scope(url) as session:
            run_pk = get_run(session, dag_id, run_id).id
        console.print(f"driving triggered {dag_id} run {run_id} here too")

        def drive_to_end() -> None:
            drive(settings, url, run_pk, console, logs)
            print_outcome(console, url, dag_id, run_id)

        thread = threading.Thread(target=drive_to_end, name=f"triggered {dag_id}", daemon=True)
        self._threads.append(thread)
        thread.start()


def start_or_resume(
    url: str, dag_id: str, conf: dict[str, Any], run_id: str | None
) -> tuple[int, str]:
    """A new ``test`` run, or the unfinished run ``run_id`` (after ``tasks clear``)."""
    with session_scope(url) as session:
        existing = _existing_run(session, dag_id, run_id)
        if existing is None:
            check_conf(session, dag_id, conf)
            try:
                run = create_run(
                    session, dag_id, run_id=run_id, conf=conf, run_type="test", user=getuser()
                )
            except (UnknownDag, RunExists, InvalidId) as error:
                fail(str(error))
            session.flush()
            return run.id, run.run_id
        if existing.state in RUN_FINISHED:
            fail(
                f"run {run_id!r} of {dag_id!r} already ended {existing.state}: "
                "clear some of its tasks first (`tradewind tasks clear`)"
            )
        if conf:
            fail("--conf cannot change an existing run", EXIT_BAD_INPUT)
        return existing.id, existing.run_id


def _existing_run(session: Session, dag_id: str, run_id: str | None) -> DagRun | None:
    if run_id is None:
        return None
    try:
        return get_run(session, dag_id, run_id)
    except NotFound:
        return None


def drive(settings: Settings, url: str, run_pk: int, console: Console, logs: bool) -> str:
    """Schedule and run the run's tries here until it ends; returns its final state."""
    pending: list[Enqueue] = []
    asked: set[int] = set()
    while True:
        with session_scope(url) as session:
            time_out_questions(session)  # no scheduler here: its defaults answer in this loop
            pending.extend(schedule_run_by_pk(session, run_pk))
        ran = bool(pending)
        while pending:
            run_try(settings, pending.pop(0), pending, console, logs)
        state, wait_seconds = run_status(url, run_pk)
        if state in RUN_FINISHED:
            return state
        if not ran:
            _say_what_is_asked(settings, url, run_pk, asked, console)
            if wait_seconds is None:
                fail(_stuck(url, run_pk, state))
            time.sleep(wait_seconds)


def _say_what_is_asked(
    settings: Settings, url: str, run_pk: int, asked: set[int], console: Console
) -> None:
    """Once per question: which task waits for a person, and where to answer it."""
    with session_scope(url) as session:
        run = session.get_one(DagRun, run_pk)
        waiting = waiting_questions(session, run.dag_id, run.run_id)
    for question in waiting:
        if question.ti.id in asked:
            continue
        asked.add(question.ti.id)
        ti, detail = question.ti, question.detail
        where = f"{settings.public_url}/dags/{ti.dag_id}/runs/{ti.run_id}/tasks/{ti.task_id}"
        timeout = (
            f"; its defaults answer at {detail.timeout_at:%H:%M:%S} UTC"
            if (detail.timeout_at and detail.defaults)
            else ""
        )
        console.print(
            f"{ti.task_id} waits for an answer to {detail.subject!r} "
            f"(options {', '.join(detail.options)}): answer it at {where} "
            f"(`tradewind api-server` on this store), or with the API's PATCH "
            f".../taskInstances/{ti.task_id}/{ti.map_index}/hitlDetails{timeout}",
            style="dodger_blue1",
        )


def _stuck(url: str, run_pk: int, state: str) -> str:
    """Why a run has nothing to do, for a person: a paused DAG is the usual cause."""
    with session_scope(url) as session:
        run = session.get_one(DagRun, run_pk)
        dag = session.get(DagModel, run.dag_id)
        if dag is not None and dag.is_paused:
            return (
                f"DAG {run.dag_id!r} is paused, so run {run.run_id!r} stays {state}: "
                f"unpause it (`tradewind dags unpause {run.dag_id}`) and run this again"
            )
    return f"run is {state} but nothing is queued, running or waiting for a retry"


def run_try(
    settings: Settings, queued: Enqueue, pending: list[Enqueue], console: Console, logs: bool
) -> None:
    """Run one try in-process; the tries it makes ready are appended to ``pending``."""
    outcome = execute(message_of(queued), settings, publish=pending.extend)
    line = Text(f"{queued.task_id} try {queued.try_number}: ")
    line.append_text(state_text(outcome))
    error = try_error(url=settings.sql_url, ti_id=queued.ti_id)
    if error and outcome != TaskInstanceState.SUCCESS:
        line.append(f"  {error}", style="red")
    console.print(line)
    if logs:
        print_try_log(settings, queued, console)


def try_error(url: str, ti_id: int) -> str:
    with session_scope(url) as session:
        ti = task_instance_by_id(session, ti_id)
        return first_line(ti.error if ti else None)


def print_try_log(settings: Settings, queued: Enqueue, console: Console) -> None:
    key = (queued.dag_id, queued.run_id, queued.task_id, queued.map_index, queued.try_number)
    path = log_path(settings.logs_folder, *key)
    if path.is_file():
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        # A rescheduled sensor's pokes share one try's log: each shows only its own lines.
        for text in lines[_PRINTED.get(path, 0) :]:
            console.print(Text("    " + text, style="dim"))
        _PRINTED[path] = len(lines)


#: Lines of each try's log printed so far by this command.
_PRINTED: dict[Path, int] = {}


def run_status(url: str, run_pk: int) -> tuple[str, float | None]:
    """The run's state and how long to wait before the next pass (None: nothing will come)."""
    with session_scope(url) as session:
        state, tis = run_waits(session, run_pk)
    retries = [ti.next_retry_at for ti in tis if ti.state in WAITING_FOR_TIME]
    if retries:
        due = min(retry or utcnow() for retry in retries)
        return state, min(max((due - utcnow()).total_seconds(), 0.05), 5.0)
    # Queued or running elsewhere (a fleet's scheduler took some of this run), or scheduled
    # but held back by a pool or max_active_tasks that other runs fill: wait for them.
    if any(ti.state in WAITING for ti in tis):
        return state, POLL_SECONDS
    return state, None
