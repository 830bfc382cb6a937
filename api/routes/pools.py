"""``/api/v2/pools``: list, get, create, change and delete pools (``op`` edits)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Response, status

from api.audit import ActingEditor
from api.deps import CanRead, DbSession
from api.models.resources import (
    PoolBody,
    PoolCollectionResponse,
    PoolPatchBody,
    PoolResponse,
    pool_response,
)
from api.paging import Paging
from state.core import NotFound
from state.engine import delete_pool, set_pool
from state.records import record_event
from state.views import get_pool_use, list_pools

router = APIRouter(prefix="/pools", tags=["Pool"])


def _pool(session: DbSession, name: str) -> PoolResponse:
    use = get_pool_use(session, name)
    if use is None:
        raise NotFound(f"no pool named {name!r}")
    return pool_response(use)


@router.get("")
def get_pools(
    _: CanRead, session: DbSession, page: Paging, pool_name_pattern: str | None = None
) -> PoolCollectionResponse:
    uses, total = list_pools(session, page, pool_name_pattern)
    return PoolCollectionResponse(pools=[pool_response(u) for u in uses], total_entries=total)


@router.get("/{pool_name}")
def get_pool(pool_name: str, _: CanRead, session: DbSession) -> PoolResponse:
    return _pool(session, pool_name)


@router.post("", status_code=status.HTTP_201_CREATED)
def post_pool(body: PoolBody, who: ActingEditor, session: DbSession) -> PoolResponse:
    body.refuse_unsupported()
    if get_pool_use(session, body.name) is not None:
        raise HTTPException(status.HTTP_409_CONFLICT, f"a pool named {body.name!r} exists")
    set_pool(session, body.name, body.slots, body.description)
    record_event(session, who, "post_pool", extra={"pool": body.name, "slots": body.slots})
    return _pool(session, body.name)


@router.patch("/{pool_name}")
def patch_pool(
    pool_name: str, body: PoolPatchBody, who: ActingEditor, session: DbSession
) -> PoolResponse:
    current = _pool(session, pool_name)
    body.refuse_unsupported()
    if body.pool is not None and body.pool != pool_name:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "a pool cannot be renamed")
    if body.slots is None and body.description is None:
        return current
    slots = current.slots if body.slots is None else body.slots
    set_pool(session, pool_name, slots, body.description)
    record_event(session, who, "patch_pool", extra={"pool": pool_name, "slots": slots})
    return _pool(session, pool_name)


@router.delete("/{pool_name}", status_code=status.HTTP_204_NO_CONTENT)
def delete_pool_route(pool_name: str, who: ActingEditor, session: DbSession) -> Response:
    if not delete_pool(session, pool_name):
        raise NotFound(f"no pool named {pool_name!r}")
    record_event(session, who, "delete_pool", extra={"pool": pool_name})
    return Response(status_code=status.HTTP_204_NO_CONTENT)
