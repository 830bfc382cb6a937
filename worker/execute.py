"""One message, start to end: claim the try, run it supervised, record it, queue what is next."""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy.exc import SQLAlchemyError

from broker_config import TaskInstanceMessage
from state.db import get_engine, session_scope, statement_scope
from state.enums import TaskInstanceState
from state.hand_over import end_and_queue, first_waiting, lone_successor
from state.models import utcnow
from state.scheduling import (
    Enqueue,
    holding_back_of,
    schedule_after_end,
    successor_to_hand_over,
    take_slot,
)
from tradewind.exceptions import TaskNotFound
from tradewind.loader import one_line_error
from tradewind.settings import Settings, SettingsError
from worker import protocol as p
from worker.claim import Claim, Final, claim_try, end_values, final_for_failure, record_final
from worker.dags import find_task
from worker.fork_server import ForkServerError, start_python_task
from worker.logs import TryLog, log_path
from worker.process import exec_runtime_task
from worker.supervisor import SupervisorSettings, supervise_process
from worker.try_context import TryContext
from worker.xcom.serving import details_at_start

log = logging.getLogger(__name__)
Publisher = Callable[[list[Enqueue]], None]


def execute(message: TaskInstanceMessage, settings: Settings, publish: Publisher) -> str:
    """Run the try ``message`` names; returns the state recorded (or why it was dropped)."""
    url = settings.sql_url
    # Statements each whole on their own: the claim is one compare-and-set (on PostgreSQL).
    with statement_scope(url) as session:
        claim = claim_try(session, message, settings.max_deliveries)
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
    try:
        dag, task = find_task(claim.fileloc, claim.ti.dag_id, claim.ti.task_id)
    except TaskNotFound as error:
        try_log.line("supervisor", str(error))
        return final_for_failure(claim, str(error), True)
    try:
        ctx = TryContext.open(claim, task_details(claim), task, settings, try_log)
    except SettingsError as error:
        try_log.line("supervisor", str(error))
        return final_for_failure(claim, str(error), True)
    try:
        if task.options.command is None:
            try:
                details = details_at_start(ctx)
                process = start_python_task(claim.fileloc, dag, task, details)
            except ForkServerError as error:
                try_log.line("supervisor", f"could not start the task: {error}")
                return final_for_failure(claim, f"could not start the task: {error}", True)
        else:
            try:
                process = exec_runtime_task(task.options.command)
            except OSError as error:  # the command is missing or not executable
                try_log.line("supervisor", f"could not start {task.options.command}: {error}")
                return final_for_failure(claim, f"could not start the task: {error}", True)
        sup = SupervisorSettings(settings.heartbeat_seconds, settings.kill_grace_seconds)
        return supervise_process(process, ctx, claim, sup)
    finally:
        if ctx.xcoms.helper is not None:
            ctx.xcoms.helper.close()


def _record(
    url: str, claim: Claim, final: Final | None, try_log: TryLog, publish: Publisher
) -> str:
    """Record the end of the try, and publish the downstream tries it made ready."""
    if final is None:
        try_log.line("supervisor", "the try lost its task instance: nothing recorded")
        return "lost"
    recorded, ready = _end_try(url, claim, final)
    if ready:  # first: the next task's start waits for it, the log does not
        try:
            publish(ready)
        except Exception:
            # Queued in SQL already: the scheduler re-sends a message that never arrives.
            log.exception("publishing the downstream of %s failed", claim.ti)
    if not recorded:
        try_log.line("supervisor", f"could not record {final.state}: the try no longer holds it")
        return "lost"
    suffix = f": {final.error}" if final.error and final.state != TaskInstanceState.SUCCESS else ""
    try_log.line("supervisor", f"try {claim.fence.try_number} ended {final.state}{suffix}")
    return str(final.state)


def _end_try(url: str, claim: Claim, final: Final) -> tuple[bool, list[Enqueue]]:
    """The end, and with it (one transaction) a pass over the run if the task has downstream.

    The pass queues what the end made ready now, not at the next scheduler loop. A task with
    nothing downstream does not pass over the run (re-reading a large run after each of its
    independent tasks would cost O(N) every time): it hands its slot to the run's first try
    waiting for one, if any, and leaves the rest to the scheduler. So does a success whose
    downstream waits for all its upstreams, when a try of one of those upstreams waits for a slot
    (a map index of the same task, another task joined with it): that try takes this one, and
    nothing downstream can be ready meanwhile. Locks are taken task instance first, then the run:
    the scheduler's passes lock runs, but never the row of a running try.
    """
    if not claim.task_spec.get("downstream"):
        passed_on = _end_and_pass_slot(url, claim, final)
        if passed_on is not None:
            return passed_on
    else:
        handed_over = _end_and_hand_over(url, claim, final)  # a chain's lone successor
        if handed_over is not None:
            return handed_over
        among = _holding_back(claim) if final.state == TaskInstanceState.SUCCESS else None
        if among:
            passed_on = _end_and_pass_slot(url, claim, final, among)
            if passed_on is not None and (not passed_on[0] or passed_on[1]):
                return passed_on  # lost; or a try holding the downstream back took the slot
            if passed_on is not None:  # recorded, and none waits: perhaps the last one
                return True, _pass_after_end(url, claim)
        try:
            with session_scope(url) as session:
                if not record_final(session, claim, final):
                    return False, []
                succeeded = final.state == TaskInstanceState.SUCCESS
                ready = schedule_after_end(
                    session, claim.run_pk, claim.ti.task_id, claim.pool, succeeded
                )
                return True, ready
        except Exception:
            # The scheduler loop guarantees progress; the pass only makes it sooner.
            log.exception("scheduling downstream of %s failed; the scheduler will do it", claim.ti)
    with statement_scope(url) as session:
        return record_final(session, claim, final), []


def _end_and_hand_over(url: str, claim: Claim, final: Final) -> tuple[bool, list[Enqueue]] | None:
    """On PostgreSQL, a success whose lone successor it alone makes ready: the end and that
    successor's queuing as one statement (``state.hand_over.end_and_queue``). None: not that
    case, or the statement failed before anything was written; the usual end follows."""
    if final.state != TaskInstanceState.SUCCESS or claim.version_hash is None:
        return None
    if get_engine(url).dialect.name != "postgresql":
        return None
    ti = claim.ti
    successor = successor_to_hand_over(ti.dag_id, claim.version_hash, ti.task_id, claim.pool)
    if successor is None:
        return None
    now = utcnow()
    values = end_values(claim, final, now)
    try:
        with statement_scope(url) as session:
            recorded, rows = end_and_queue(
                session,
                claim.fence,
                (TaskInstanceState.SUCCESS, values),
                claim.run_pk,
                lone_successor(ti.dag_id, ti.run_id, successor),
                claim.version_hash,
                now,
            )
    except SQLAlchemyError:
        log.exception("the end of %s with its successor failed; recording it alone", ti)
        return None
    if not recorded or rows:
        return recorded, [Enqueue.of(row) for row in rows]
    # Recorded, and the successor could not take the slot: the usual pass decides (the
    # scheduler's loop would, otherwise).
    return True, _pass_after_end(url, claim)


def _pass_after_end(url: str, claim: Claim) -> list[Enqueue]:
    """The pass over the run after a success recorded on its own (a transaction of its own)."""
    try:
        with session_scope(url) as session:
            return schedule_after_end(session, claim.run_pk, claim.ti.task_id, claim.pool, True)
    except SQLAlchemyError:
        log.exception("scheduling downstream of %s failed; the scheduler will do it", claim.ti)
        return []


def _holding_back(claim: Claim) -> list[str] | None:
    """The tasks whose unfinished tries keep everything downstream of the claim's task waiting
    (``state.hand_over.holding_back``), as the DAG's structure this process read says."""
    if claim.version_hash is None:
        return None
    return holding_back_of(claim.ti.dag_id, claim.version_hash, claim.ti.task_id)


def _end_and_pass_slot(
    url: str, claim: Claim, final: Final, among: list[str] | None = None
) -> tuple[bool, list[Enqueue]] | None:
    """The end of a try, and its slot handed to the first try of its run waiting for one in the
    same pool (with ``among``, a try of one of those tasks: ``state.hand_over.first_waiting``),
    in one transaction; on PostgreSQL in one statement. None when that failed before anything
    was written: the usual end follows."""
    if claim.version_hash is None:
        return None
    ti = claim.ti
    postgresql = get_engine(url).dialect.name == "postgresql"
    taker = first_waiting(ti.dag_id, ti.run_id, claim.pool, among, postgresql)
    now = utcnow()
    end = (final.state, end_values(claim, final, now))
    try:
        if postgresql:
            with statement_scope(url) as session:
                recorded, rows = end_and_queue(
                    session, claim.fence, end, claim.run_pk, taker, claim.version_hash, now
                )
            return recorded, [Enqueue.of(row) for row in rows]
        with session_scope(url) as session:
            # The taker first: the ended try still counts as active, as in the one statement.
            queued = take_slot(session, claim.run_pk, taker, claim.version_hash, now)
            if not record_final(session, claim, final):
                session.rollback()
                return False, []
            return True, queued
    except SQLAlchemyError:
        log.exception("the end of %s handing its slot over failed; recording it alone", ti)
        return None
