"""``/api/v2/dags/{dag_id}/dagRuns``: list, get, trigger, mark, clear and delete runs."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Response, status

from api.audit import ActingRunner, about_run
from api.deps import CanRead, Context, DbSession
from api.models.dag_runs import (
    DAGRunClearBody,
    DAGRunCollectionResponse,
    DAGRunPatchBody,
    DAGRunResponse,
    TriggerDAGRunPostBody,
    dag_run_response,
)
from api.models.task_instances import TaskInstanceCollectionResponse
from api.paging import Paging, RunDates
from api.routes.task_instance_writes import collection
from api.structure import check_conf
from state.core import DagRunState
from state.engine import (
    Runs,
    Scope,
    apply_plan,
    create_run,
    get_dag_model,
    plan_clear,
    plan_run_mark,
)
from state.records import delete_run, record_event, set_run_note
from state.views import get_run, list_runs

router = APIRouter(prefix="/dags/{dag_id}/dagRuns", tags=["DagRun"])

#: Fields of Airflow's trigger body Tradewind has no concept for: refused, never ignored.
_NOT_SUPPORTED = ("partition_key", "run_after")


@router.get("")
def get_dag_runs(
    dag_id: str,
    _: CanRead,
    session: DbSession,
    page: Paging,
    dates: RunDates,
    state: Annotated[list[DagRunState] | None, Query()] = None,
    run_type: Annotated[list[str] | None, Query()] = None,
    run_id_pattern: str | None = None,
    dag_id_pattern: str | None = None,
) -> DAGRunCollectionResponse:
    if dag_id != "~":
        get_dag_model(session, dag_id)
    where = replace(
        dates,
        states=state or (),
        run_types=run_type or (),
        run_id_pattern=run_id_pattern,
        dag_id_pattern=dag_id_pattern,
    )
    runs, total = list_runs(session, dag_id, page, where)
    return DAGRunCollectionResponse(
        dag_runs=[dag_run_response(run) for run in runs], total_entries=total
    )


@router.get("/{dag_run_id}")
def get_dag_run(dag_id: str, dag_run_id: str, _: CanRead, session: DbSession) -> DAGRunResponse:
    return dag_run_response(get_run(session, dag_id, dag_run_id))


@router.post("")
def trigger_dag_run(
    dag_id: str, body: TriggerDAGRunPostBody, who: ActingRunner, session: DbSession
) -> DAGRunResponse:
    """Create a queued run (the scheduler takes it from there), its conf checked first."""
    unsupported = [name for name in _NOT_SUPPORTED if getattr(body, name) is not None]
    if unsupported:
        detail = f"{unsupported[0]} is not supported by Tradewind: leave it null"
        raise HTTPException(status.HTTP_400_BAD_REQUEST, detail)
    model = get_dag_model(session, dag_id)
    check_conf(model, body.conf or {})
    interval = None
    if body.logical_date is not None:
        start = body.data_interval_start or body.logical_date
        interval = (start, body.data_interval_end or body.logical_date)
    run = create_run(
        session,
        dag_id,
        body.dag_run_id,
        body.conf,
        "manual",
        interval,
        triggered_by=who.triggered_by,
        user=who.user,
    )
    if body.note is not None:
        set_run_note(session, run, body.note, who.user)
    session.flush()
    record_event(session, who, "trigger_dag_run", about_run(run), {"conf": body.conf or {}})
    return dag_run_response(run)


@router.patch("/{dag_run_id}")
def patch_dag_run(
    dag_id: str,
    dag_run_id: str,
    body: DAGRunPatchBody,
    who: ActingRunner,
    session: DbSession,
    update_mask: Annotated[list[str] | None, Query()] = None,
) -> DAGRunResponse:
    """Mark the run (``state``) and/or write its note (``note``), as ``update_mask`` names."""
    run = get_run(session, dag_id, dag_run_id)
    changed: dict[str, object] = {}
    if body.note is not None and (update_mask is None or "note" in update_mask):
        set_run_note(session, run, body.note, who.user)
        changed["note"] = body.note
    if body.state is not None and (update_mask is None or "state" in update_mask):
        plan = plan_run_mark(session, [run], DagRunState(body.state))
        apply_plan(session, plan, who.user)
        session.refresh(run)
        changed["state"] = body.state
    if changed:
        record_event(session, who, "patch_dag_run", about_run(run), changed)
    return dag_run_response(run)


@router.post("/{dag_run_id}/clear")
def clear_dag_run(
    dag_id: str,
    dag_run_id: str,
    body: DAGRunClearBody,
    who: ActingRunner,
    session: DbSession,
    context: Context,
) -> DAGRunResponse | TaskInstanceCollectionResponse:
    """Clear the run's task instances (only the failed ones with ``only_failed``); a dry run
    lists what would be cleared."""
    get_run(session, dag_id, dag_run_id)
    scope = Scope(only_failed=body.only_failed)
    plan = plan_clear(session, dag_id, Runs(dag_run_id), None, scope)
    if body.dry_run:
        return collection(plan)
    apply_plan(session, plan, who.user, context.purgers)
    run = get_run(session, dag_id, dag_run_id)
    record_event(session, who, "clear_dag_run", about_run(run), {"only_failed": body.only_failed})
    if body.note is not None:
        set_run_note(session, run, body.note, who.user)
    session.refresh(run)
    return dag_run_response(run)


@router.delete("/{dag_run_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_dag_run(
    dag_id: str, dag_run_id: str, who: ActingRunner, session: DbSession, context: Context
) -> Response:
    run = get_run(session, dag_id, dag_run_id)
    record_event(session, who, "delete_dag_run", about_run(run))
    delete_run(session, run, context.purgers.xcoms, context.purgers.states)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
