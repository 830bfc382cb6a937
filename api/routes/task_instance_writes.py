"""Marking task instances (``PATCH``) and clearing them (``POST …/clearTaskInstances``)."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status
from sqlalchemy.orm import Session

from api.audit import ActingRunner, about_ti, about_tis
from api.deps import Context, DbSession
from api.models.task_instances import (
    ClearTaskInstancesBody,
    PatchTaskInstanceBody,
    TaskInstanceCollectionResponse,
    ti_response,
)
from api.paging import MapIndexPath, OptionalMapIndex
from api.routes.clearing import FAILED
from api.structure import DagStructure, dag_view
from state.core import CLEARABLE, MAX_PAGE_LIMIT, DagRun, Page, TaskInstanceState
from state.engine import clear_task_instances, get_dag_model
from state.records import Actor, mark_task_instances, record_event, set_ti_note
from state.views import RunFilter, TIFilter, TIRow, get_run, list_runs, list_task_instances

router = APIRouter(tags=["Task Instance"])
TI_PATH = "/dags/{dag_id}/dagRuns/{dag_run_id}/taskInstances/{task_id}"


def related(
    view: DagStructure, task_ids: Iterable[str], upstream: bool, downstream: bool
) -> set[str]:
    """``task_ids`` with, as asked, every task upstream and downstream of them (transitively)."""
    chosen = set(task_ids)
    pending = list(chosen)
    while pending:
        task = view.tasks.get(pending.pop())
        if task is None:
            continue
        near = (task.upstream if upstream else ()) + (task.downstream if downstream else ())
        for other in near:
            if other not in chosen:
                chosen.add(other)
                pending.append(other)
    return chosen


def _refuse_past_and_future(past: bool, future: bool) -> None:
    if past or future:
        detail = "include_past and include_future are not supported: name the runs instead"
        raise HTTPException(status.HTTP_400_BAD_REQUEST, detail)


def _collection(rows: list[TIRow]) -> TaskInstanceCollectionResponse:
    return TaskInstanceCollectionResponse(
        task_instances=[ti_response(row) for row in rows], total_entries=len(rows)
    )


def _tis_of(session: Session, run: DagRun, task_ids: Collection[str]) -> list[TIRow]:
    """The task instances of ``task_ids`` in ``run``: at most a page's worth (bounded)."""
    where = TIFilter(task_ids=sorted(task_ids))
    rows, _ = list_task_instances(
        session, run.dag_id, run.run_id, Page(limit=MAX_PAGE_LIMIT), where
    )
    return rows


@router.patch(TI_PATH)
def patch_task_instance(
    dag_id: str,
    dag_run_id: str,
    task_id: str,
    body: PatchTaskInstanceBody,
    who: ActingRunner,
    session: DbSession,
    map_index: OptionalMapIndex = None,
    update_mask: Annotated[list[str] | None, Query()] = None,
) -> TaskInstanceCollectionResponse:
    """Mark the task instance (and, as asked, its upstream or downstream) success, failed or
    skipped, and/or write its note; returns the task instances marked (or noted)."""
    _refuse_past_and_future(body.include_past, body.include_future)
    view = dag_view(get_dag_model(session, dag_id))
    if task_id not in view.tasks:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"DAG {dag_id!r} has no task {task_id!r}")
    run = get_run(session, dag_id, dag_run_id)
    task_ids = related(view, [task_id], body.include_upstream, body.include_downstream)
    rows = [
        row
        for row in _tis_of(session, run, task_ids)
        if map_index is None or row.ti.task_id != task_id or row.ti.map_index == map_index
    ]
    if body.note is not None and (update_mask is None or "note" in update_mask):
        noted = _write_notes(session, who, [r for r in rows if r.ti.task_id == task_id], body.note)
        if body.new_state is None:
            return _collection(noted)
    if body.new_state is None or (update_mask is not None and "new_state" not in update_mask):
        return _collection(rows)
    state = TaskInstanceState(body.new_state)
    moved = set(mark_task_instances(session, run, [row.ti for row in rows], state))
    for row in rows:
        if row.ti.id in moved:
            session.refresh(row.ti)
            extra = {"new_state": str(state), "from_task": task_id}
            record_event(
                session, who, "patch_task_instance", about_ti(row.ti, row.logical_date), extra
            )
    return _collection([row for row in rows if row.ti.id in moved])


def _write_notes(session: Session, who: Actor, rows: list[TIRow], note: str) -> list[TIRow]:
    for row in rows:
        set_ti_note(session, row.ti, note, who.user)
        record_event(
            session, who, "patch_task_instance", about_ti(row.ti, row.logical_date), {"note": note}
        )
    return rows


@router.patch(TI_PATH + "/{map_index:int}")
def patch_task_instance_by_map_index(
    dag_id: str,
    dag_run_id: str,
    task_id: str,
    map_index: MapIndexPath,
    body: PatchTaskInstanceBody,
    who: ActingRunner,
    session: DbSession,
    update_mask: Annotated[list[str] | None, Query()] = None,
) -> TaskInstanceCollectionResponse:
    return patch_task_instance(
        dag_id, dag_run_id, task_id, body, who, session, map_index, update_mask
    )


def _runs_to_clear(session: Session, dag_id: str, body: ClearTaskInstancesBody) -> list[DagRun]:
    if body.dag_run_id is not None:
        return [get_run(session, dag_id, body.dag_run_id)]
    where = RunFilter(logical_date_gte=body.start_date, logical_date_lte=body.end_date)
    runs, _ = list_runs(session, dag_id, Page(limit=MAX_PAGE_LIMIT, order_by=("-id",)), where)
    return runs


def _wanted_states(body: ClearTaskInstancesBody) -> set[TaskInstanceState]:
    if body.only_running:
        return {TaskInstanceState.RUNNING}
    return set(FAILED) if body.only_failed else set(CLEARABLE)


@router.post("/dags/{dag_id}/clearTaskInstances")
def post_clear_task_instances(
    dag_id: str,
    body: ClearTaskInstancesBody,
    who: ActingRunner,
    session: DbSession,
    context: Context,
) -> TaskInstanceCollectionResponse:
    """Clear the task instances the body selects (a dry run, the default, only lists them)."""
    _refuse_past_and_future(body.include_past, body.include_future)
    view = dag_view(get_dag_model(session, dag_id))
    named = {t if isinstance(t, str) else t[0] for t in body.task_ids or ()} or set(view.tasks)
    unknown = sorted(named - set(view.tasks))
    if unknown:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"DAG {dag_id!r} has no task {unknown[0]!r}")
    task_ids = related(view, named, body.include_upstream, body.include_downstream)
    states = _wanted_states(body)
    chosen: list[TIRow] = []
    for run in _runs_to_clear(session, dag_id, body):
        rows = [row for row in _tis_of(session, run, task_ids) if row.ti.state in states]
        chosen += rows
        if rows and not body.dry_run:
            ids = sorted({row.ti.task_id for row in rows})
            purgers = context.purgers
            clear_task_instances(session, run, ids, False, purgers.xcoms, purgers.states)
            extra = {"only_failed": body.only_failed, "only_running": body.only_running}
            for about in about_tis([row.ti for row in rows], run.logical_date):
                record_event(session, who, "post_clear_task_instances", about, extra)
    if not body.dry_run:
        for row in chosen:
            session.refresh(row.ti)
    return _collection(chosen)
