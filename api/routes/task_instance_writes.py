"""Marking task instances and task groups (``PATCH``, and their dry runs), clearing them
(``POST …/clearTaskInstances``), and the bulk ``PATCH`` of a run's task instances.

Every route asks ``state.engine.recover`` for the plan (which task instances change) and either
lists it (a dry run) or applies it: what a dry run lists is what the same request does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status
from sqlalchemy.orm import Session

from api.audit import ActingRunner, about_ti, record_plan
from api.deps import CanRun, Context, DbSession
from api.models.bulk import (
    BulkActionResponse,
    BulkResponse,
    BulkTaskInstanceBody,
    BulkTaskInstancesBody,
    BulkUpdateTaskInstances,
)
from api.models.task_instances import (
    ClearTaskInstancesBody,
    PatchTaskInstanceBody,
    TaskInstanceCollectionResponse,
    ti_response,
)
from api.paging import MapIndexPath, OptionalMapIndex
from state.core import NotFound, TaskInstance, TaskInstanceState, structure_of
from state.engine import (
    BadScope,
    Plan,
    Runs,
    Scope,
    Target,
    apply_plan,
    get_dag_model,
    group_task_ids,
    plan_clear,
    plan_mark,
    plan_targets,
)
from state.records import Actor, record_event, set_ti_note
from state.views import TIRow, get_run

router = APIRouter(tags=["Task Instance"])
RUN_PATH = "/dags/{dag_id}/dagRuns/{dag_run_id}"
TI_PATH = RUN_PATH + "/taskInstances/{task_id}"
GROUP_PATH = RUN_PATH + "/taskGroupInstances/{group_id}"
UpdateMask = Annotated[list[str] | None, Query()]


def collection(
    plan: Plan, tis: Sequence[TaskInstance] | None = None
) -> TaskInstanceCollectionResponse:
    """Airflow's answer: the task instances (``tis``, else the plan's), with their runs' dates."""
    runs = {change.ti.id: change.run for change in plan.changes}
    chosen = plan.tis if tis is None else tis
    rows = [TIRow(ti, runs[ti.id].logical_date, runs[ti.id].created_at) for ti in chosen]
    return TaskInstanceCollectionResponse(
        task_instances=[ti_response(row) for row in rows], total_entries=len(rows)
    )


def scope_of(body: PatchTaskInstanceBody | BulkTaskInstanceBody) -> Scope:
    return Scope(
        upstream=body.include_upstream,
        downstream=body.include_downstream,
        past=body.include_past,
        future=body.include_future,
    )


def _no_note(note: str | None) -> None:
    if note is not None:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "Tradewind keeps no notes")


def _mark(
    session: Session,
    key: tuple[str, str],
    targets: Sequence[Target],
    body: PatchTaskInstanceBody,
    update_mask: list[str] | None,
) -> Plan:
    """The plan of a mark; without a new state (or masked out), the targets as they are."""
    dag_id, run_id = key
    get_run(session, dag_id, run_id)  # 404 for a run that does not exist
    if body.new_state is None or not _sets_state(body, update_mask):
        return plan_targets(session, dag_id, run_id, targets)
    state = TaskInstanceState(body.new_state)
    return plan_mark(session, dag_id, run_id, targets, scope_of(body), state)


def _sets_state(body: PatchTaskInstanceBody, update_mask: list[str] | None) -> bool:
    return body.new_state is not None and (update_mask is None or "new_state" in update_mask)


def _ti_targets(session: Session, dag_id: str, task_id: str, map_index: int | None) -> list[Target]:
    if task_id not in structure_of(get_dag_model(session, dag_id)).tasks:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"DAG {dag_id!r} has no task {task_id!r}")
    return [task_id if map_index is None else (task_id, map_index)]


def _group_targets(session: Session, dag_id: str, group_id: str) -> list[Target]:
    try:
        return list(group_task_ids(structure_of(get_dag_model(session, dag_id)), group_id))
    except BadScope as error:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(error)) from error


def _marked(
    session: Session, plan: Plan, who: Actor, body: PatchTaskInstanceBody, mask: list[str] | None
) -> TaskInstanceCollectionResponse:
    if not _sets_state(body, mask):
        return collection(plan)
    done = apply_plan(session, plan, who.user)
    record_plan(session, who, "patch_task_instance", plan, done, {"new_state": body.new_state})
    return collection(plan, done)


def _write_notes(session: Session, who: Actor, plan: Plan, note: str) -> None:
    dates = {change.ti.id: change.run.logical_date for change in plan.changes}
    for ti in plan.tis:
        set_ti_note(session, ti, note, who.user)
        about = about_ti(ti, dates.get(ti.id))
        record_event(session, who, "patch_task_instance", about, {"note": note})


@router.patch(TI_PATH)
def patch_task_instance(
    dag_id: str,
    dag_run_id: str,
    task_id: str,
    body: PatchTaskInstanceBody,
    who: ActingRunner,
    session: DbSession,
    map_index: OptionalMapIndex = None,
    update_mask: UpdateMask = None,
) -> TaskInstanceCollectionResponse:
    """Mark the task instance (every map index of it without ``map_index``) and, as asked, its
    upstream, downstream, past and future ones, and/or write its note; returns those marked."""
    targets = _ti_targets(session, dag_id, task_id, map_index)
    if body.note is not None and (update_mask is None or "note" in update_mask):
        noted = plan_targets(session, dag_id, dag_run_id, targets)
        _write_notes(session, who, noted, body.note)
        if not _sets_state(body, update_mask):
            return collection(noted)
    plan = _mark(session, (dag_id, dag_run_id), targets, body, update_mask)
    return _marked(session, plan, who, body, update_mask)


@router.patch(TI_PATH + "/dry_run")
def patch_task_instance_dry_run(
    dag_id: str,
    dag_run_id: str,
    task_id: str,
    body: PatchTaskInstanceBody,
    _: CanRun,
    session: DbSession,
    map_index: OptionalMapIndex = None,
    update_mask: UpdateMask = None,
) -> TaskInstanceCollectionResponse:
    """What ``PATCH`` of the same body would mark, changing nothing."""
    targets = _ti_targets(session, dag_id, task_id, map_index)
    return collection(_mark(session, (dag_id, dag_run_id), targets, body, update_mask))


@router.patch(TI_PATH + "/{map_index:int}/dry_run")
def patch_task_instance_dry_run_by_map_index(
    dag_id: str,
    dag_run_id: str,
    task_id: str,
    map_index: MapIndexPath,
    body: PatchTaskInstanceBody,
    _: CanRun,
    session: DbSession,
    update_mask: UpdateMask = None,
) -> TaskInstanceCollectionResponse:
    return patch_task_instance_dry_run(
        dag_id, dag_run_id, task_id, body, _, session, map_index, update_mask
    )


@router.patch(TI_PATH + "/{map_index:int}")
def patch_task_instance_by_map_index(
    dag_id: str,
    dag_run_id: str,
    task_id: str,
    map_index: MapIndexPath,
    body: PatchTaskInstanceBody,
    who: ActingRunner,
    session: DbSession,
    update_mask: UpdateMask = None,
) -> TaskInstanceCollectionResponse:
    return patch_task_instance(
        dag_id, dag_run_id, task_id, body, who, session, map_index, update_mask
    )


@router.patch(GROUP_PATH)
def patch_task_group_instances(
    dag_id: str,
    dag_run_id: str,
    group_id: str,
    body: PatchTaskInstanceBody,
    who: ActingRunner,
    session: DbSession,
    update_mask: UpdateMask = None,
) -> TaskInstanceCollectionResponse:
    """Mark every task instance of a task group (nested groups included), with the scopes."""
    _no_note(body.note)
    targets = _group_targets(session, dag_id, group_id)
    plan = _mark(session, (dag_id, dag_run_id), targets, body, update_mask)
    return _marked(session, plan, who, body, update_mask)


@router.patch(GROUP_PATH + "/dry_run")
def patch_task_group_instances_dry_run(
    dag_id: str,
    dag_run_id: str,
    group_id: str,
    body: PatchTaskInstanceBody,
    _: CanRun,
    session: DbSession,
    update_mask: UpdateMask = None,
) -> TaskInstanceCollectionResponse:
    targets = _group_targets(session, dag_id, group_id)
    return collection(_mark(session, (dag_id, dag_run_id), targets, body, update_mask))


def clear_plan(session: Session, dag_id: str, body: ClearTaskInstancesBody) -> Plan:
    """The plan of ``clearTaskInstances``: a named run (its past and future as asked), or a
    window of logical dates (opened on the past or future side as asked)."""
    if body.dag_run_id is not None:
        runs = Runs(body.dag_run_id)
    else:
        start = None if body.include_past else body.start_date
        end = None if body.include_future else body.end_date
        runs = Runs(None, start, end)
    scope = Scope(
        upstream=body.include_upstream,
        downstream=body.include_downstream,
        past=body.include_past,
        future=body.include_future,
        only_failed=body.only_failed,
        only_running=body.only_running,
    )
    get_dag_model(session, dag_id)
    return plan_clear(session, dag_id, runs, body.task_ids, scope)


@router.post("/dags/{dag_id}/clearTaskInstances")
def post_clear_task_instances(
    dag_id: str,
    body: ClearTaskInstancesBody,
    who: ActingRunner,
    session: DbSession,
    context: Context,
) -> TaskInstanceCollectionResponse:
    """Clear the task instances the body selects (a dry run, the default, only lists them)."""
    if not body.dry_run:
        _no_note(body.note)
    plan = clear_plan(session, dag_id, body)
    if body.dry_run:
        return collection(plan)
    if body.prevent_running_task and any(ti.state == TaskInstanceState.RUNNING for ti in plan.tis):
        detail = "some of these task instances are running, and prevent_running_task is set"
        raise HTTPException(status.HTTP_409_CONFLICT, detail)
    done = apply_plan(session, plan, who.user, context.purgers, body.reset_dag_runs)
    extra = {"only_failed": body.only_failed, "only_running": body.only_running}
    record_plan(session, who, "post_clear_task_instances", plan, done, extra)
    return collection(plan, done)


@router.patch(RUN_PATH + "/taskInstances")
def bulk_task_instances(
    dag_id: str, dag_run_id: str, body: BulkTaskInstancesBody, who: ActingRunner, session: DbSession
) -> BulkResponse:
    """Mark several task instances, each entity with its own scopes (``~`` for the DAG or the
    run: each entity names its own). Deleting or creating task instances is refused."""
    answer = BulkResponse()
    for action in body.actions:
        result = BulkActionResponse()
        if isinstance(action, BulkUpdateTaskInstances):
            for entity in action.entities:
                _bulk_mark(session, (dag_id, dag_run_id), entity, who, result)
            answer.update = result
        else:
            detail = f"task instances cannot be {action.action}d in bulk here: mark or clear them"
            result.errors.append({"error": detail, "status_code": 400})
            setattr(answer, action.action, result)
    return answer


def _bulk_mark(
    session: Session,
    path: tuple[str, str],
    entity: BulkTaskInstanceBody,
    who: Actor,
    result: BulkActionResponse,
) -> None:
    dag_id = entity.dag_id or path[0]
    run_id = entity.dag_run_id or path[1]
    if "~" in (dag_id, run_id) or entity.new_state is None:
        result.errors.append(
            {
                "error": f"{entity.task_id}: name its dag_id, dag_run_id and new_state",
                "status_code": 400,
            }
        )
        return
    try:
        targets = _ti_targets(session, dag_id, entity.task_id, entity.map_index)
        state = TaskInstanceState(entity.new_state)
        get_run(session, dag_id, run_id)
        plan = plan_mark(session, dag_id, run_id, targets, scope_of(entity), state)
        done = apply_plan(session, plan, who.user)
        extra = {"new_state": state, "bulk": True}
        record_plan(session, who, "patch_task_instance", plan, done, extra)
        for ti in done:
            result.success.append(f"{ti.dag_id}.{ti.run_id}.{ti.task_id}[{ti.map_index}]")
    except (BadScope, NotFound) as error:
        result.errors.append(
            {"error": str(error), "status_code": 404 if isinstance(error, NotFound) else 400}
        )
    except HTTPException as error:
        result.errors.append({"error": error.detail, "status_code": error.status_code})
