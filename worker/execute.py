"""One message, start to end: claim the try, run it supervised, record it, queue what is next."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import ExitStack

from broker_config import TaskInstanceMessage
from state.end import end_try
from state.enums import TaskInstanceState
from state.scheduling import Enqueue
from tradewind.dag import DAG
from tradewind.exceptions import TaskNotFound
from tradewind.loader import one_line_error
from tradewind.settings import Settings, SettingsError
from tradewind.task import Task
from tradewind.virtualenv import needs_fresh_process
from worker import wire as p
from worker.claim import Claim, Final, claim_through_outage, end_through_outage, final_for_failure
from worker.dags import find_task
from worker.fork_server import ForkServerError, start_python_task
from worker.logs import TryLog, log_path
from worker.process import TaskProcess, exec_runtime_task
from worker.start_beats import START_BEATS
from worker.supervisor import SupervisorSettings, supervise_process
from worker.try_context import TryContext
from worker.xcom.serving import details_at_start

log = logging.getLogger(__name__)
Publisher = Callable[[list[Enqueue]], None]


def execute(message: TaskInstanceMessage, settings: Settings, publish: Publisher) -> str:
    """Run the try ``message`` names; returns the state recorded (or why it was dropped)."""
    url = settings.sql_url
    # Statements each whole on their own: the claim is one compare-and-set (on PostgreSQL).
    claim = claim_through_outage(url, message, settings.max_deliveries)
    if isinstance(claim, str):
        log.warning("dropped message for %s: %s", message.describe(), claim)
        return "dropped"
    path = log_path(settings.logs_folder, *_log_key(claim))
    try_log = TryLog(path)
    try:
        try_log.line("supervisor", f"running {message.describe()}")
        try:
            final = run_claimed(claim, settings, try_log)
        except Exception as error:
            # A fault of the supervisor itself: the try ends now, as failed (and retried if
            # tries are left), not when the zombie rule notices its silence.
            log.exception("supervising %s failed", message.describe())
            reason = f"the supervisor failed: {one_line_error(error)}"
            try_log.line("supervisor", reason)
            final = final_for_failure(claim, reason, True)
        return _record(url, claim, final, try_log, publish)
    finally:
        try_log.close()


def _log_key(claim: Claim) -> tuple[str, str, str, int, int]:
    ti = claim.ti
    return ti.dag_id, ti.run_id, ti.task_id, ti.map_index, claim.fence.try_number


def task_details(claim: Claim) -> p.TaskDetails:
    return p.TaskDetails(
        dag_id=claim.ti.dag_id,
        run_id=claim.ti.run_id,
        task_id=claim.ti.task_id,
        map_index=claim.ti.map_index,
        try_number=claim.fence.try_number,
        max_tries=claim.max_tries,
        generation=claim.generation,
        **claim.run,
    )


def run_claimed(claim: Claim, settings: Settings, try_log: TryLog) -> Final | None:
    with ExitStack() as starting:
        # Until the supervisor's loop beats for it, a try whose start takes long (a heavy DAG
        # file, a cold fork server on a busy machine) is beaten for by worker/start_beats.py.
        starting.enter_context(
            START_BEATS.starting(settings.sql_url, claim.fence, settings.heartbeat_seconds)
        )
        try:
            dag, task = find_task(claim.fileloc, claim.ti.dag_id, claim.ti.task_id)
            ctx = TryContext.open(claim, task_details(claim), task, settings, try_log)
        except (TaskNotFound, SettingsError) as error:
            try_log.line("supervisor", str(error))
            return final_for_failure(claim, str(error), True)
        try:
            process = _start_process(claim, dag, task, ctx, settings)
            if isinstance(process, Final):
                return process
            starting.close()
            sup = SupervisorSettings(settings.heartbeat_seconds, settings.kill_grace_seconds)
            return supervise_process(process, ctx, claim, sup)
        finally:
            if ctx.xcoms.helper is not None:
                ctx.xcoms.helper.close()


def _start_process(
    claim: Claim, dag: DAG, task: Task, ctx: TryContext, settings: Settings
) -> TaskProcess | Final:
    """The try's task process (from the fork server, or the runtime task's command), or the
    try's failure when it cannot start."""
    if task.options.command is None:
        try:
            details = details_at_start(ctx)
            reuse = 1 if needs_fresh_process(task) else settings.task_process_reuse
            return start_python_task(claim.fileloc, dag, task, details, reuse)
        except ForkServerError as error:
            ctx.log.line("supervisor", f"could not start the task: {error}")
            return final_for_failure(claim, f"could not start the task: {error}", True)
    try:
        return exec_runtime_task(task.options.command)
    except OSError as error:  # the command is missing or not executable
        ctx.log.line("supervisor", f"could not start {task.options.command}: {error}")
        return final_for_failure(claim, f"could not start the task: {error}", True)


def _record(
    url: str, claim: Claim, final: Final | None, try_log: TryLog, publish: Publisher
) -> str:
    """Record the end of the try, and publish the downstream tries it made ready."""
    if final is None:
        try_log.line("supervisor", "the try lost its task instance: nothing recorded")
        return "lost"
    recorded = end_through_outage(url, claim, final, lambda: end_try(url, claim.end(final)))
    if recorded.enqueued:  # first: the next task's start waits for it, the log does not
        try:
            publish(recorded.enqueued)
        except Exception:
            # Queued in SQL already: the scheduler re-sends a message that never arrives.
            log.exception("publishing the downstream of %s failed", claim.ti)
    if not recorded.recorded:
        try_log.line("supervisor", f"could not record {final.state}: the try no longer holds it")
        return "lost"
    suffix = f": {final.error}" if final.error and final.state != TaskInstanceState.SUCCESS else ""
    try_log.line("supervisor", f"try {claim.fence.try_number} ended {final.state}{suffix}")
    return str(final.state)
