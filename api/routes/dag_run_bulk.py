"""Runs in bulk: ``PATCH /dags/{dag_id}/dagRuns`` (mark or delete several runs) and
``POST /dags/{dag_id}/clearDagRuns`` (clear several runs, with a dry run), as Airflow 3.3.

Each run's mark or clear is planned by ``state.engine.recover``, as for one run; one entity
that fails (an unknown run) is reported in the answer's errors and the others go on. Each run
marked, deleted or cleared is an event of its own, as the one-run routes record it
(``patch_dag_run``, ``delete_dag_run``, ``clear_dag_run``), with ``bulk: true`` in its extra.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, status
from sqlalchemy.orm import Session

from api.audit import ActingRunner, about_run
from api.deps import Context, DbSession
from api.models.bulk import (
    BulkActionResponse,
    BulkDAGRunBody,
    BulkDAGRunClearBody,
    BulkDagRunsBody,
    BulkDeleteDagRuns,
    BulkResponse,
    BulkUpdateDagRuns,
)
from api.models.dag_runs import DAGRunCollectionResponse, dag_run_response
from api.models.task_instances import TaskInstanceCollectionResponse
from api.routes.task_instance_writes import collection
from state.core import DagRun, DagRunState, NotFound
from state.engine import (
    Change,
    Plan,
    Runs,
    Scope,
    apply_plan,
    get_dag_model,
    plan_clear,
    plan_run_mark,
)
from state.records import Actor, delete_run, record_event
from state.views import get_run

router = APIRouter(prefix="/dags/{dag_id}", tags=["DagRun"])
#: In each bulk event's extra: the run was one of several acted on by one request.
BULK = {"bulk": True}


def _run_of(session: Session, dag_id: str, entity: BulkDAGRunBody | str) -> DagRun:
    run_id = entity if isinstance(entity, str) else entity.dag_run_id
    named = dag_id if isinstance(entity, str) else entity.dag_id or dag_id
    if named == "~":
        raise NotFound(f"run {run_id!r}: name its dag_id")
    return get_run(session, named, run_id)


@router.patch("/dagRuns")
def bulk_dag_runs(
    dag_id: str, body: BulkDagRunsBody, who: ActingRunner, session: DbSession, context: Context
) -> BulkResponse:
    """Mark runs (``update`` with a ``state``) or delete them; creating runs is the trigger's."""
    answer = BulkResponse()
    for action in body.actions:
        result = BulkActionResponse()
        if isinstance(action, BulkUpdateDagRuns):
            for entity in action.entities:
                _mark_one(session, dag_id, entity, who, result)
        elif isinstance(action, BulkDeleteDagRuns):
            for gone in action.entities:
                try:
                    run = _run_of(session, dag_id, gone)
                    record_event(session, who, "delete_dag_run", about_run(run), BULK)
                    delete_run(session, run, context.purgers.xcoms, context.purgers.states)
                    result.success.append(f"{run.dag_id}.{run.run_id}")
                except NotFound as error:
                    result.errors.append({"error": str(error), "status_code": 404})
        else:
            detail = "runs are created by POST /dags/{dag_id}/dagRuns (a trigger), not in bulk"
            result.errors.append({"error": detail, "status_code": 400})
        setattr(answer, action.action, result)
    return answer


def _mark_one(
    session: Session, dag_id: str, entity: BulkDAGRunBody, who: Actor, result: BulkActionResponse
) -> None:
    if entity.note is not None or entity.state is None:
        detail = f"run {entity.dag_run_id!r}: give a state (Tradewind keeps no notes)"
        result.errors.append({"error": detail, "status_code": 400})
        return
    try:
        run = _run_of(session, dag_id, entity)
    except NotFound as error:
        result.errors.append({"error": str(error), "status_code": 404})
        return
    apply_plan(session, plan_run_mark(session, [run], DagRunState(entity.state)), who.user)
    record_event(session, who, "patch_dag_run", about_run(run), {**BULK, "state": entity.state})
    result.success.append(f"{run.dag_id}.{run.run_id}")


@router.post("/clearDagRuns")
def clear_dag_runs(
    dag_id: str, body: BulkDAGRunClearBody, who: ActingRunner, session: DbSession, context: Context
) -> TaskInstanceCollectionResponse | DAGRunCollectionResponse:
    """Clear several runs (only their failed task instances with ``only_failed``); a dry run,
    the default, lists the task instances that would be cleared."""
    partitions = (body.partition_key, body.partition_date_start, body.partition_date_end)
    if any(value is not None for value in partitions):
        detail = "clearDagRuns selects runs by dag_runs here, not by partition"
        raise HTTPException(status.HTTP_400_BAD_REQUEST, detail)
    get_dag_model(session, dag_id)
    runs = [_run_of(session, dag_id, entity) for entity in body.dag_runs]
    changes: list[Change] = []
    for run in runs:
        scope = Scope(only_failed=body.only_failed)
        changes += plan_clear(session, run.dag_id, Runs(run.run_id), None, scope).changes
    plan = Plan("clear", tuple(changes))
    if body.dry_run:
        return collection(plan)
    apply_plan(session, plan, who.user, context.purgers)
    for run in runs:
        session.refresh(run)
        extra = {**BULK, "only_failed": body.only_failed}
        record_event(session, who, "clear_dag_run", about_run(run), extra)
    return DAGRunCollectionResponse(
        dag_runs=[dag_run_response(run) for run in runs], total_entries=len(runs)
    )
