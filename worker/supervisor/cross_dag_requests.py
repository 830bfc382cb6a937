"""The supervisor's handlers of a task's cross-DAG requests (``tradewind/standard/``).

A run is triggered through ``state.engine.trigger_run``: the same check of the conf against the
DAG's params and the same ``create_run`` as ``tradewind dags trigger``. An unknown DAG or a bad
conf is one ``ErrorResponse`` line, which fails the try with it. The trigger is a write of the
try, fenced by it; reads of another DAG's states take no fence, as they write nothing.
"""

from __future__ import annotations

from collections.abc import Callable

from state.core import session_scope
from state.engine import (
    Purgers,
    UnknownDag,
    dag_tasks_and_groups,
    run_state,
    run_states_at,
    task_states_at,
    trigger_run,
)
from tradewind.params import ParamValidationError
from worker import wire as p
from worker.state_store.purge import state_purger
from worker.supervisor.request_table import handles
from worker.supervisor.try_context import TryContext
from worker.xcom.purge import xcom_purger

#: Called with ``(dag_id, run_id)`` after a request created a run: ``tradewind dags test``
#: drives such runs itself, as no scheduler runs there (cli/inline.py).
RUN_CREATED_HOOKS: list[Callable[[str, str], None]] = []


@handles
def trigger_dag_run(ctx: TryContext, request: p.TriggerDagRun) -> p.Message:
    reset = _purgers(ctx) if request.reset_dag_run else None
    try:
        with session_scope(ctx.url) as session:
            outcome = trigger_run(
                session,
                request.dag_id,
                request.run_id,
                request.conf,
                request.logical_date,
                reset,
                ctx.fence,
            )
    except UnknownDag as error:
        return p.ErrorResponse(error=str(error))
    except ParamValidationError as error:
        return p.ErrorResponse(error=f"DAG {request.dag_id!r}: {error}")
    if outcome != "exists":
        for hook in RUN_CREATED_HOOKS:
            hook(request.dag_id, request.run_id)
    return p.TriggerDagRunResult(run_id=request.run_id, outcome=outcome)


def _purgers(ctx: TryContext) -> Purgers:
    """Where a reset run's XComs and state objects go, as for ``tradewind tasks clear``."""
    if ctx.settings is None:
        return Purgers()
    return Purgers(xcom_purger(ctx.settings), state_purger(ctx.settings))


@handles
def get_dag_run_state(ctx: TryContext, request: p.GetDagRunState) -> p.Message:
    with session_scope(ctx.url) as session:
        return p.DagRunStateResult(state=run_state(session, request.dag_id, request.run_id))


@handles
def get_dag_run_states(ctx: TryContext, request: p.GetDagRunStates) -> p.Message:
    with session_scope(ctx.url) as session:
        states = run_states_at(session, request.dag_id, request.logical_dates)
    return p.DagRunStatesResult(states=states)


@handles
def get_task_instance_states(ctx: TryContext, request: p.GetTaskInstanceStates) -> p.Message:
    try:
        with session_scope(ctx.url) as session:
            found = task_states_at(
                session,
                request.dag_id,
                request.logical_dates,
                request.task_ids,
                request.task_group_id,
            )
    except UnknownDag:
        found = []  # nothing to count yet: the sensor waits (check_existence says more)
    return p.TaskInstanceStatesResult(task_instances=found)


@handles
def get_dag_tasks(ctx: TryContext, request: p.GetDagTasks) -> p.Message:
    with session_scope(ctx.url) as session:
        known = dag_tasks_and_groups(session, request.dag_id)
    if known is None:
        return p.DagTasksResult(found=False)
    return p.DagTasksResult(
        found=True, task_ids=known.task_ids, group_ids=known.group_ids, is_paused=known.is_paused
    )
