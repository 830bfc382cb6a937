"""``/api/v2/dags/{dag_id}/dagRuns/{dag_run_id}/taskInstances``: list, get, mapped, tries."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from fastapi import APIRouter, Query

from api.deps import CanRead, DbSession
from api.models.task_instances import (
    TaskInstanceCollectionResponse,
    TaskInstanceHistoryCollectionResponse,
    TaskInstanceHistoryResponse,
    TaskInstanceResponse,
    ti_response,
    try_response,
)
from api.paging import IntsQuery, MapIndexPath, MapIndexQuery, Paging, TIDates, TryNumberPath
from state.core import NotFound
from state.engine import get_dag_model
from state.records import TIKey, tries_of
from state.views import TIFilter, get_run, get_task_instance, list_task_instances

PATH = "/dags/{dag_id}/dagRuns/{dag_run_id}/taskInstances"
router = APIRouter(prefix=PATH, tags=["Task Instance"])

ListQuery = Annotated[list[str] | None, Query()]


@router.get("")
def get_task_instances(
    dag_id: str,
    dag_run_id: str,
    _: CanRead,
    session: DbSession,
    page: Paging,
    dates: TIDates,
    task_id: str | None = None,
    state: ListQuery = None,
    pool: ListQuery = None,
    queue: ListQuery = None,
    try_number: IntsQuery = None,
    map_index: IntsQuery = None,
    dag_id_pattern: str | None = None,
    task_display_name_pattern: str | None = None,
) -> TaskInstanceCollectionResponse:
    if dag_id != "~":
        get_dag_model(session, dag_id)
    if dag_run_id != "~":
        get_run(session, dag_id, dag_run_id)
    where = replace(
        dates,
        dag_id_pattern=dag_id_pattern,
        task_id_pattern=task_display_name_pattern,
        task_id=task_id,
        states=state or (),
        pools=pool or (),
        queues=queue or (),
        try_numbers=try_number or (),
        map_indexes=map_index or (),
    )
    rows, total = list_task_instances(session, dag_id, dag_run_id, page, where)
    return TaskInstanceCollectionResponse(
        task_instances=[ti_response(row) for row in rows], total_entries=total
    )


@router.get("/{task_id}")
def get_task_instance_route(
    dag_id: str, dag_run_id: str, task_id: str, _: CanRead, session: DbSession
) -> TaskInstanceResponse:
    return ti_response(get_task_instance(session, TIKey(dag_id, dag_run_id, task_id)))


@router.get("/{task_id}/listMapped")
def get_mapped_task_instances(
    dag_id: str, dag_run_id: str, task_id: str, _: CanRead, session: DbSession, page: Paging
) -> TaskInstanceCollectionResponse:
    get_run(session, dag_id, dag_run_id)
    where = TIFilter(task_id=task_id, mapped_only=True)
    rows, total = list_task_instances(session, dag_id, dag_run_id, page, where)
    return TaskInstanceCollectionResponse(
        task_instances=[ti_response(row) for row in rows], total_entries=total
    )


@router.get("/{task_id}/tries")
def get_task_instance_tries(
    dag_id: str,
    dag_run_id: str,
    task_id: str,
    _: CanRead,
    session: DbSession,
    map_index: MapIndexQuery = -1,
) -> TaskInstanceHistoryCollectionResponse:
    ti = get_task_instance(session, TIKey(dag_id, dag_run_id, task_id, map_index)).ti
    tries = [try_response(ti, one_try) for one_try in tries_of(session, ti)]
    return TaskInstanceHistoryCollectionResponse(task_instances=tries, total_entries=len(tries))


@router.get("/{task_id}/tries/{task_try_number}")
def get_task_instance_try_details(
    dag_id: str,
    dag_run_id: str,
    task_id: str,
    task_try_number: TryNumberPath,
    _: CanRead,
    session: DbSession,
    map_index: MapIndexQuery = -1,
) -> TaskInstanceHistoryResponse:
    ti = get_task_instance(session, TIKey(dag_id, dag_run_id, task_id, map_index)).ti
    for one_try in tries_of(session, ti):
        if one_try.try_number == task_try_number:
            return try_response(ti, one_try)
    raise NotFound(f"{dag_id}/{dag_run_id}/{task_id} has no try {task_try_number}")


@router.get("/{task_id}/{map_index:int}/tries")
def get_mapped_task_instance_tries(
    dag_id: str,
    dag_run_id: str,
    task_id: str,
    map_index: MapIndexPath,
    _: CanRead,
    session: DbSession,
) -> TaskInstanceHistoryCollectionResponse:
    return get_task_instance_tries(dag_id, dag_run_id, task_id, _, session, map_index)


@router.get("/{task_id}/{map_index:int}")
def get_mapped_task_instance(
    dag_id: str,
    dag_run_id: str,
    task_id: str,
    map_index: MapIndexPath,
    _: CanRead,
    session: DbSession,
) -> TaskInstanceResponse:
    return ti_response(get_task_instance(session, TIKey(dag_id, dag_run_id, task_id, map_index)))
