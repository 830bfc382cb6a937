"""``…/taskInstances/{task_id}/xcomEntries``: a task's XComs, listed and read."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import CanRead, DbSession
from api.models.resources import (
    XComCollectionResponse,
    XComResponseNative,
    XComResponseString,
    xcom_entry,
    xcom_value,
)
from api.paging import MapIndexQuery, OptionalMapIndex, Paging
from state.records import TIKey
from state.views import get_xcom, list_xcoms

PATH = "/dags/{dag_id}/dagRuns/{dag_run_id}/taskInstances/{task_id}/xcomEntries"
router = APIRouter(prefix=PATH, tags=["XCom"])


@router.get("")
def get_xcom_entries(
    dag_id: str,
    dag_run_id: str,
    task_id: str,
    _: CanRead,
    session: DbSession,
    page: Paging,
    xcom_key: str | None = None,
    map_index: OptionalMapIndex = None,
) -> XComCollectionResponse:
    key = TIKey(dag_id, dag_run_id, task_id, -1 if map_index is None else map_index)
    rows, total = list_xcoms(session, key, page, xcom_key, all_map_indexes=map_index is None)
    return XComCollectionResponse(
        xcom_entries=[xcom_entry(row) for row in rows], total_entries=total
    )


@router.get("/{xcom_key}")
def get_xcom_entry(
    dag_id: str,
    dag_run_id: str,
    task_id: str,
    xcom_key: str,
    _: CanRead,
    session: DbSession,
    map_index: MapIndexQuery = -1,
    deserialize: bool = False,
    stringify: bool = False,
) -> XComResponseNative | XComResponseString:
    row = get_xcom(session, TIKey(dag_id, dag_run_id, task_id, map_index), xcom_key)
    return xcom_value(row, stringify)
