"""``…/taskInstances/{task_id}/state-store``: a task instance's state values, read, written
and deleted.

Writing and deleting are an operator's repair (a ``user`` may do them, as clearing); the objects
of values kept in object storage go with their rows. A value written here is kept in the row
(JSON), whatever the configured backend: one larger than the database takes is refused (413).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Response, status
from sqlalchemy.orm import Session

from api.audit import ActingRunner
from api.deps import CanRead, Context, DbSession
from api.models.resources import (
    TaskStateStoreBody,
    TaskStateStoreCollectionResponse,
    TaskStateStorePatchBody,
    TaskStateStoreResponse,
    state_value_response,
)
from api.paging import MapIndexQuery, Paging
from state.core import NotFound
from state.records import (
    About,
    Actor,
    TIKey,
    database_max_value_bytes,
    delete_state_values,
    record_event,
    set_state_value,
)
from state.views import get_state_value, get_task_instance, list_state_values

PATH = "/dags/{dag_id}/dagRuns/{dag_run_id}/taskInstances/{task_id}/state-store"
router = APIRouter(prefix=PATH, tags=["Task State Store"])


def _ti_key(dag_id: str, dag_run_id: str, task_id: str, map_index: MapIndexQuery = -1) -> TIKey:
    """The task instance every route of the state store names by its path and ``map_index``."""
    return TIKey(dag_id, dag_run_id, task_id, map_index)


Key = Annotated[TIKey, Depends(_ti_key)]


@router.get("")
def list_task_state_store(
    ti_key: Key,
    _: CanRead,
    session: DbSession,
    page: Paging,
) -> TaskStateStoreCollectionResponse:
    get_task_instance(session, ti_key)
    rows, total = list_state_values(session, ti_key, page)
    return TaskStateStoreCollectionResponse(
        task_state_store=[state_value_response(row) for row in rows], total_entries=total
    )


@router.get("/{key}")
def get_task_state_store(
    ti_key: Key,
    key: str,
    _: CanRead,
    session: DbSession,
) -> TaskStateStoreResponse:
    return state_value_response(get_state_value(session, ti_key, key))


@router.delete("/{key}", status_code=status.HTTP_204_NO_CONTENT)
def delete_task_state_store(
    ti_key: Key,
    key: str,
    who: ActingRunner,
    session: DbSession,
    context: Context,
) -> Response:
    if not delete_state_values(session, ti_key, [key], context.purgers.states):
        raise NotFound(f"{ti_key.dag_id}/{ti_key.run_id}/{ti_key.task_id} has no state key {key!r}")
    _recorded(session, who, "delete_task_state_store", ti_key, key)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.delete("", status_code=status.HTTP_204_NO_CONTENT)
def clear_task_state_store(
    ti_key: Key,
    who: ActingRunner,
    session: DbSession,
    context: Context,
) -> Response:
    get_task_instance(session, ti_key)
    delete_state_values(session, ti_key, None, context.purgers.states)
    _recorded(session, who, "clear_task_state_store", ti_key, None)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


def _recorded(session: Session, who: Actor, event: str, ti: TIKey, key: str | None) -> None:
    """The event of a person's change to a task's state store: the key, never the value."""
    about = About(ti.dag_id, ti.run_id, ti.task_id, ti.map_index)
    record_event(session, who, event, about, {"state_key": key} if key else None)


def _write(context: Context, session: DbSession, key: TIKey, state_key: str, value: object,
           expires_at: dt.datetime | None) -> None:  # fmt: skip
    text = json.dumps(value)
    limit = database_max_value_bytes(context.url)
    if len(text.encode()) > limit:
        detail = f"the value is over the {limit} bytes the database takes in one value"
        raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, detail)
    set_state_value(session, key, state_key, text, expires_at)


@router.put("/{key}", status_code=status.HTTP_204_NO_CONTENT)
def set_task_state_store(
    ti_key: Key,
    key: str,
    body: TaskStateStoreBody,
    who: ActingRunner,
    session: DbSession,
    context: Context,
) -> Response:
    get_task_instance(session, ti_key)
    _write(context, session, ti_key, key, body.value, body.expiry())
    _recorded(session, who, "set_task_state_store", ti_key, key)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.patch("/{key}")
def patch_task_state_store(
    ti_key: Key,
    key: str,
    body: TaskStateStorePatchBody,
    who: ActingRunner,
    session: DbSession,
    context: Context,
) -> TaskStateStoreResponse:
    """Change an existing key's value, keeping its expiry."""
    existing = get_state_value(session, ti_key, key)
    _write(context, session, ti_key, key, body.value, existing.expires_at)
    _recorded(session, who, "patch_task_state_store", ti_key, key)
    session.flush()
    return state_value_response(get_state_value(session, ti_key, key))
