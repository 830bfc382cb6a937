"""The scheduling engine: a DAG's structure, readiness under the trigger rules, scheduling passes,
runs, pools, liveness, and the life of a try (claim, beat, record) with the end's planner and
executor.

It imports the core and the records, never the views: what the UI shows cannot change what is
scheduled. The supervisor and the scheduler both call it; neither holds store logic of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from state.core.faces import lazy_names

if TYPE_CHECKING:
    from state.engine.backfills import (
        BackfillEnded,
        BackfillRequest,
        BackfillView,
        InvalidBackfill,
        cancel_backfill,
        create_backfill,
        get_backfill,
        list_backfills,
        plan_backfill,
        set_paused,
    )
    from state.engine.cross_dag import (
        Purgers,
        dag_tasks_and_groups,
        run_state,
        run_states_at,
        task_states_at,
        trigger_run,
    )
    from state.engine.liveness import (
        dag_tasks,
        fail_queued,
        find_stalled_queued,
        find_zombies,
        give_up_try,
        resend_queued,
    )
    from state.engine.marker_clear import MarkerDepthExceeded
    from state.engine.outcomes import Failed, Outcome, Rescheduled, Skipped, Succeeded
    from state.engine.past import waits_on_past
    from state.engine.pools import (
        PoolRefused,
        delete_pool,
        ensure_pool,
        pool_names,
        pool_usage,
        set_pool,
    )
    from state.engine.readiness import decide
    from state.engine.recover import (
        BadScope,
        Change,
        Plan,
        Runs,
        Scope,
        Target,
        apply_plan,
        group_task_ids,
        plan_clear,
        plan_mark,
        plan_run_mark,
        relatives,
    )
    from state.engine.run_life import time_out_run, timed_out_runs
    from state.engine.run_wake import RunWakeups
    from state.engine.runs import (
        RunExists,
        UnknownDag,
        clear_task_instances,
        create_run,
        get_dag_model,
    )
    from state.engine.scheduling import (
        Enqueue,
        queue_task_alone,
        schedule_run_by_pk,
        try_schedule_run,
    )
    from state.engine.try_life import ClaimUnavailable, HeldTry, beat, claim, record

# Each name's module, imported when the name is first asked for (state/core/faces.py).
_MODULE_OF = {
    "Purgers": "cross_dag",
    "dag_tasks_and_groups": "cross_dag",
    "run_state": "cross_dag",
    "run_states_at": "cross_dag",
    "task_states_at": "cross_dag",
    "trigger_run": "cross_dag",
    "MarkerDepthExceeded": "marker_clear",
    "BackfillEnded": "backfills",
    "BackfillRequest": "backfills",
    "BackfillView": "backfills",
    "ClaimUnavailable": "try_life",
    "Enqueue": "scheduling",
    "Failed": "outcomes",
    "HeldTry": "try_life",
    "InvalidBackfill": "backfills",
    "Outcome": "outcomes",
    "PoolRefused": "pools",
    "Rescheduled": "outcomes",
    "RunExists": "runs",
    "RunWakeups": "run_wake",
    "Skipped": "outcomes",
    "Succeeded": "outcomes",
    "UnknownDag": "runs",
    "beat": "try_life",
    "cancel_backfill": "backfills",
    "claim": "try_life",
    "clear_task_instances": "runs",
    "create_backfill": "backfills",
    "create_run": "runs",
    "dag_tasks": "liveness",
    "decide": "readiness",
    "delete_pool": "pools",
    "ensure_pool": "pools",
    "fail_queued": "liveness",
    "find_stalled_queued": "liveness",
    "find_zombies": "liveness",
    "get_backfill": "backfills",
    "get_dag_model": "runs",
    "give_up_try": "liveness",
    "list_backfills": "backfills",
    "plan_backfill": "backfills",
    "pool_names": "pools",
    "pool_usage": "pools",
    "queue_task_alone": "scheduling",
    "record": "try_life",
    "resend_queued": "liveness",
    "schedule_run_by_pk": "scheduling",
    "set_paused": "backfills",
    "set_pool": "pools",
    "time_out_run": "run_life",
    "timed_out_runs": "run_life",
    "try_schedule_run": "scheduling",
    "waits_on_past": "past",
    "BadScope": "recover",
    "Change": "recover",
    "Plan": "recover",
    "Runs": "recover",
    "Scope": "recover",
    "Target": "recover",
    "apply_plan": "recover",
    "group_task_ids": "recover",
    "plan_clear": "recover",
    "plan_mark": "recover",
    "plan_run_mark": "recover",
    "relatives": "recover",
}

__all__ = [
    "BackfillEnded",
    "BackfillRequest",
    "BackfillView",
    "BadScope",
    "Change",
    "ClaimUnavailable",
    "Enqueue",
    "Failed",
    "HeldTry",
    "InvalidBackfill",
    "MarkerDepthExceeded",
    "Outcome",
    "Plan",
    "PoolRefused",
    "Purgers",
    "Rescheduled",
    "RunExists",
    "RunWakeups",
    "Runs",
    "Scope",
    "Skipped",
    "Succeeded",
    "Target",
    "UnknownDag",
    "apply_plan",
    "beat",
    "cancel_backfill",
    "claim",
    "clear_task_instances",
    "create_backfill",
    "create_run",
    "dag_tasks",
    "dag_tasks_and_groups",
    "decide",
    "delete_pool",
    "ensure_pool",
    "fail_queued",
    "find_stalled_queued",
    "find_zombies",
    "get_backfill",
    "get_dag_model",
    "give_up_try",
    "group_task_ids",
    "list_backfills",
    "plan_backfill",
    "plan_clear",
    "plan_mark",
    "plan_run_mark",
    "pool_names",
    "pool_usage",
    "queue_task_alone",
    "record",
    "relatives",
    "resend_queued",
    "run_state",
    "run_states_at",
    "schedule_run_by_pk",
    "set_paused",
    "set_pool",
    "task_states_at",
    "time_out_run",
    "timed_out_runs",
    "trigger_run",
    "try_schedule_run",
    "waits_on_past",
]


__getattr__ = lazy_names(__name__, _MODULE_OF)
