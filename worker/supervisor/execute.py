"""One message, start to end: claim the try, run it supervised, record it, publish what is next.

The store does the claim and the record (``state.engine.try_life``); here is only what runs the try:
its log, its task process, its supervisor, and the ``Outcome`` they end with, handed over as it is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import ExitStack

from broker_config import TaskInstanceMessage
from state.engine import Enqueue, Failed, HeldTry, Outcome, Skipped, claim, record
from tradewind.dag import DAG
from tradewind.exceptions import TaskNotFound
from tradewind.loader import one_line_error
from tradewind.settings import Settings, SettingsError
from tradewind.task import Task
from tradewind.virtualenv import needs_fresh_process
from worker import wire as p
from worker.dags import find_task
from worker.fork_server.client import ForkServerError, start_python_task
from worker.process import TaskProcess, exec_runtime_task
from worker.supervisor.emails import send_alert
from worker.supervisor.logs import TryLog, log_path
from worker.supervisor.loop import SupervisorSettings, supervise_process
from worker.supervisor.start_beats import START_BEATS
from worker.supervisor.try_context import TryContext
from worker.xcom.serving import details_at_start

log = logging.getLogger(__name__)
Publisher = Callable[[list[Enqueue]], None]


def execute(message: TaskInstanceMessage, settings: Settings, publish: Publisher) -> str:
    """Run the try ``message`` names; returns the state recorded (or why it was dropped)."""
    url = settings.sql_url
    # Statements each whole on their own: the claim is one compare-and-set (on PostgreSQL).
    held = claim(url, message, settings.max_deliveries)
    if isinstance(held, str):
        log.warning("dropped message for %s: %s", message.describe(), held)
        return "dropped"
    path = log_path(settings.logs_folder, *_log_key(held))
    try_log = TryLog(path)
    try:
        try_log.line("supervisor", f"running {message.describe()}")
        try:
            outcome = run_claimed(held, settings, try_log)
        except Exception as error:
            # A fault of the supervisor itself: the try ends now, as failed (and retried if
            # tries are left), not when the zombie rule notices its silence.
            log.exception("supervising %s failed", message.describe())
            reason = f"the supervisor failed: {one_line_error(error)}"
            try_log.line("supervisor", reason)
            outcome = Failed(reason)
        state = _record(url, held, outcome, try_log, publish)
        send_alert(held, state, outcome, settings, try_log)
        return state
    finally:
        try_log.close()


def _log_key(held: HeldTry) -> tuple[str, str, str, int, int]:
    ti = held.ti
    return ti.dag_id, ti.run_id, ti.task_id, ti.map_index, held.fence.try_number


def task_details(held: HeldTry) -> p.TaskDetails:
    return p.TaskDetails(
        dag_id=held.ti.dag_id,
        run_id=held.ti.run_id,
        task_id=held.ti.task_id,
        map_index=held.ti.map_index,
        try_number=held.fence.try_number,
        max_tries=held.max_tries,
        generation=held.generation,
        next_method=held.next_method,
        next_kwargs=held.next_kwargs,
        **held.run,
    )


def run_claimed(held: HeldTry, settings: Settings, try_log: TryLog) -> Outcome | None:
    """Run the held try supervised; how it ended, or None when it lost its task instance."""
    with ExitStack() as starting:
        # Until the supervisor's loop beats for it, a try whose start takes long (a heavy DAG
        # file, a cold fork server on a busy machine) is beaten for by
        # worker/supervisor/start_beats.py.
        starting.enter_context(
            START_BEATS.starting(settings.sql_url, held.fence, settings.heartbeat_seconds)
        )
        try:
            dag, task = find_task(held.fileloc, held.ti.dag_id, held.ti.task_id)
            ctx = TryContext.open(held, task_details(held), task, settings, try_log)
        except (TaskNotFound, SettingsError) as error:
            try_log.line("supervisor", str(error))
            return Failed(str(error))
        try:
            process = _start_process(held, dag, task, ctx, settings)
            if isinstance(process, Failed):
                return process
            starting.close()
            sup = SupervisorSettings(settings.heartbeat_seconds, settings.kill_grace_seconds)
            return supervise_process(process, ctx, held, sup)
        finally:
            if ctx.xcoms.helper is not None:
                ctx.xcoms.helper.close()


def _start_process(
    held: HeldTry, dag: DAG, task: Task, ctx: TryContext, settings: Settings
) -> TaskProcess | Failed:
    """The try's task process (from the fork server, or the runtime task's command), or the
    try's failure when it cannot start."""
    if task.options.command is None:
        try:
            details = details_at_start(ctx)
            reuse = 1 if needs_fresh_process(task) else settings.task_process_reuse
            timeout = settings.task_start_timeout_seconds
            return start_python_task(held.fileloc, dag, task, details, reuse, timeout)
        except ForkServerError as error:
            ctx.log.line("supervisor", f"could not start the task: {error}")
            return Failed(f"could not start the task: {error}")
    try:
        return exec_runtime_task(task.options.command)
    except OSError as error:  # the command is missing or not executable
        ctx.log.line("supervisor", f"could not start {task.options.command}: {error}")
        return Failed(f"could not start the task: {error}")


def _record(
    url: str, held: HeldTry, outcome: Outcome | None, try_log: TryLog, publish: Publisher
) -> str:
    """Record the end of the try, and publish the downstream tries it made ready."""
    if outcome is None:
        try_log.line("supervisor", "the try lost its task instance: nothing recorded")
        return "lost"
    ended = record(url, held, outcome)
    if ended.enqueued:  # first: the next task's start waits for it, the log does not
        try:
            publish(ended.enqueued)
        except Exception:
            # Queued in SQL already: the scheduler re-sends a message that never arrives.
            log.exception("publishing the downstream of %s failed", held.ti)
    if not ended.recorded:
        try_log.line("supervisor", f"could not record {ended.state}: the try no longer holds it")
        return "lost"
    suffix = f": {error}" if (error := _error_of(outcome)) else ""
    try_log.line("supervisor", f"try {held.fence.try_number} ended {ended.state}{suffix}")
    return str(ended.state)


def _error_of(outcome: Outcome) -> str | None:
    """The error line the try's log shows with its end (a failure's, or why it skipped)."""
    if isinstance(outcome, Failed):
        return outcome.error
    return outcome.reason if isinstance(outcome, Skipped) else None
