"""``/api/v2/connections``: list, get, create, change and delete connections (``op`` edits).

A password is written, never read back: responses show ``***`` where one is set.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Response, status

from api.audit import ActingEditor
from api.deps import CanRead, DbSession
from api.models.resources import (
    ConnectionBody,
    ConnectionCollectionResponse,
    ConnectionResponse,
    connection_response,
)
from api.paging import Paging
from state.core import NotFound
from state.records import delete_connection, get_connection, put_connection, record_event
from state.views import list_connections_page

router = APIRouter(prefix="/connections", tags=["Connection"])


def _connection(session: DbSession, conn_id: str) -> ConnectionResponse:
    connection = get_connection(session, conn_id)
    if connection is None:
        raise NotFound(f"no connection named {conn_id!r}")
    return connection_response(connection)


def _put(session: DbSession, body: ConnectionBody, password: str | None) -> None:
    body.refuse_unsupported()
    try:
        extra = body.extra_dict()
    except ValueError as error:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, str(error)) from None
    put_connection(
        session,
        body.connection_id,
        conn_type=body.conn_type,
        host=body.host,
        login=body.login,
        password=password,
        schema=body.schema_,
        port=body.port,
        extra=extra,
        description=body.description,
    )
    session.flush()


@router.get("")
def get_connections(
    _: CanRead, session: DbSession, page: Paging, connection_id_pattern: str | None = None
) -> ConnectionCollectionResponse:
    connections, total = list_connections_page(session, page, connection_id_pattern)
    return ConnectionCollectionResponse(
        connections=[connection_response(c) for c in connections], total_entries=total
    )


@router.get("/{connection_id}")
def get_connection_route(connection_id: str, _: CanRead, session: DbSession) -> ConnectionResponse:
    return _connection(session, connection_id)


def _named(body: ConnectionBody) -> dict[str, object]:
    """What the event log keeps of a connection written: never its password nor its extra."""
    return {"connection_id": body.connection_id, "conn_type": body.conn_type}


@router.post("", status_code=status.HTTP_201_CREATED)
def post_connection(
    body: ConnectionBody, who: ActingEditor, session: DbSession
) -> ConnectionResponse:
    if get_connection(session, body.connection_id) is not None:
        detail = f"a connection named {body.connection_id!r} exists"
        raise HTTPException(status.HTTP_409_CONFLICT, detail)
    _put(session, body, body.password)
    record_event(session, who, "post_connection", extra=_named(body))
    return _connection(session, body.connection_id)


@router.patch("/{connection_id}")
def patch_connection(
    connection_id: str, body: ConnectionBody, who: ActingEditor, session: DbSession
) -> ConnectionResponse:
    existing = get_connection(session, connection_id)
    if existing is None:
        raise NotFound(f"no connection named {connection_id!r}")
    if body.connection_id != connection_id:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "the body's id differs from the path's")
    # A patch without a password (or with the mask read back) keeps the one stored.
    password = existing.password if body.password in (None, "***") else body.password
    _put(session, body, password)
    record_event(session, who, "patch_connection", extra=_named(body))
    return _connection(session, connection_id)


@router.delete("/{connection_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_connection_route(connection_id: str, who: ActingEditor, session: DbSession) -> Response:
    if not delete_connection(session, connection_id):
        raise NotFound(f"no connection named {connection_id!r}")
    record_event(session, who, "delete_connection", extra={"connection_id": connection_id})
    return Response(status_code=status.HTTP_204_NO_CONTENT)
