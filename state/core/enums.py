"""The states of task instances and DAG runs, and the transitions allowed between them.

The allowed transitions are data: ``transition()`` in ``state/core/transitions.py`` refuses any move
that is not listed here, so a bug shows up as an error instead of a silently corrupted run.
"""

from __future__ import annotations

from enum import StrEnum


class TaskInstanceState(StrEnum):
    NONE = "none"
    SCHEDULED = "scheduled"
    QUEUED = "queued"
    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"
    UP_FOR_RETRY = "up_for_retry"
    SKIPPED = "skipped"
    UPSTREAM_FAILED = "upstream_failed"
    REMOVED = "removed"
    # A sensor in reschedule mode between two pokes: no slot held, next_retry_at is the next poke.
    UP_FOR_RESCHEDULE = "up_for_reschedule"
    # Waiting on the triggerer (DESIGN.md §12): no slot held, no try consumed; its trigger is a
    # row of the ``trigger`` table, and its event puts it back to scheduled.
    DEFERRED = "deferred"
    # Waiting for a person's answer (a human-in-the-loop task, docs/hitl.md): no slot held, no
    # try consumed, no trigger; the answer (or its timeout's defaults) puts it back to scheduled.
    AWAITING_INPUT = "awaiting_input"


class DagRunState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"


TI = TaskInstanceState

#: States a task instance never leaves without a clear.
FINISHED: frozenset[TaskInstanceState] = frozenset(
    {TI.SUCCESS, TI.FAILED, TI.SKIPPED, TI.UPSTREAM_FAILED, TI.REMOVED}
)
#: States that wait for ``next_retry_at``, then go back to scheduled (no slot held meanwhile).
WAITING_FOR_TIME: frozenset[TaskInstanceState] = frozenset({TI.UP_FOR_RETRY, TI.UP_FOR_RESCHEDULE})
#: States that hold a worker slot or are about to.
ACTIVE: frozenset[TaskInstanceState] = frozenset({TI.QUEUED, TI.RUNNING})

_CLEARABLE = {
    TI.SUCCESS,
    TI.FAILED,
    TI.SKIPPED,
    TI.UPSTREAM_FAILED,
    TI.UP_FOR_RETRY,
    TI.UP_FOR_RESCHEDULE,
    TI.DEFERRED,
    TI.AWAITING_INPUT,
}

TASK_INSTANCE_TRANSITIONS: dict[TaskInstanceState, frozenset[TaskInstanceState]] = {
    # none -> queued: a lone successor taking its upstream's slot, in the transaction that
    # recorded that upstream's success (docs/decisions/a-successor-takes-the-slot.md).
    TI.NONE: frozenset({TI.SCHEDULED, TI.QUEUED, TI.SKIPPED, TI.UPSTREAM_FAILED, TI.REMOVED}),
    TI.SCHEDULED: frozenset({TI.QUEUED, TI.NONE, TI.REMOVED}),
    # queued -> queued is the re-send of a lost message; queued -> failed/up_for_retry
    # ends a try whose message was re-sent or delivered too many times.
    TI.QUEUED: frozenset({TI.RUNNING, TI.QUEUED, TI.FAILED, TI.UP_FOR_RETRY, TI.NONE}),
    TI.RUNNING: frozenset(
        {
            TI.SUCCESS,
            TI.FAILED,
            TI.UP_FOR_RETRY,
            TI.UP_FOR_RESCHEDULE,
            TI.DEFERRED,
            TI.AWAITING_INPUT,
            TI.SKIPPED,
            TI.NONE,
        }
    ),
    TI.UP_FOR_RETRY: frozenset({TI.SCHEDULED, TI.NONE, TI.REMOVED}),
    # Back to scheduled when the next poke is due (the same try: state/engine/scheduling.py).
    TI.UP_FOR_RESCHEDULE: frozenset({TI.SCHEDULED, TI.NONE, TI.REMOVED}),
    # Back to scheduled when its trigger fires (the same try, as a sensor's next poke); failed
    # when its deferral's timeout passes first (state/engine/deferral.py).
    TI.DEFERRED: frozenset({TI.SCHEDULED, TI.FAILED, TI.NONE, TI.REMOVED}),
    # Back to scheduled with the answer, or with its defaults (or the timeout's error) once its
    # timeout passes (state/engine/hitl.py).
    TI.AWAITING_INPUT: frozenset({TI.SCHEDULED, TI.NONE, TI.REMOVED}),
    TI.SUCCESS: frozenset({TI.NONE, TI.REMOVED}),
    TI.FAILED: frozenset({TI.NONE, TI.REMOVED}),
    TI.SKIPPED: frozenset({TI.NONE, TI.REMOVED}),
    TI.UPSTREAM_FAILED: frozenset({TI.NONE, TI.REMOVED}),
    # A removed task that comes back in a new version of its DAG is restored.
    TI.REMOVED: frozenset({TI.NONE}),
}

DAG_RUN_TRANSITIONS: dict[DagRunState, frozenset[DagRunState]] = {
    DagRunState.QUEUED: frozenset({DagRunState.RUNNING, DagRunState.FAILED}),
    DagRunState.RUNNING: frozenset({DagRunState.SUCCESS, DagRunState.FAILED, DagRunState.QUEUED}),
    DagRunState.SUCCESS: frozenset({DagRunState.QUEUED}),
    DagRunState.FAILED: frozenset({DagRunState.QUEUED}),
}

CLEARABLE: frozenset[TaskInstanceState] = frozenset(
    _CLEARABLE | {TI.SCHEDULED, TI.QUEUED, TI.RUNNING}
)

#: What a person may mark a task instance as (the API's and the UI's "mark success/failed/
#: skipped"), from where. Kept apart from the table above, which is what the fleet itself does:
#: a scheduler or a supervisor moving a finished task instance is still a bug caught there.
#: A running try marked so sees the change at its next heartbeat and is stopped (§7).
MARKED_STATES: frozenset[TaskInstanceState] = frozenset({TI.SUCCESS, TI.FAILED, TI.SKIPPED})
TASK_INSTANCE_MARKS: dict[TaskInstanceState, frozenset[TaskInstanceState]] = {
    state: frozenset() if state is TI.REMOVED else MARKED_STATES - {state} for state in TI
}
DAG_RUN_MARKS: dict[DagRunState, frozenset[DagRunState]] = {
    DagRunState.QUEUED: frozenset({DagRunState.SUCCESS, DagRunState.FAILED}),
    DagRunState.RUNNING: frozenset({DagRunState.SUCCESS, DagRunState.FAILED, DagRunState.QUEUED}),
    DagRunState.SUCCESS: frozenset({DagRunState.FAILED, DagRunState.QUEUED}),
    DagRunState.FAILED: frozenset({DagRunState.SUCCESS, DagRunState.QUEUED}),
}
