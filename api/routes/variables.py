"""``/api/v2/variables``: list, get, create, change and delete variables (``op`` edits).

A secret variable's value is never returned (``***``): the tasks that need it read it through
their supervisor.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Response, status

from api.audit import ActingEditor
from api.deps import CanRead, DbSession
from api.models.resources import (
    VariableBody,
    VariableCollectionResponse,
    VariableResponse,
    variable_response,
)
from api.paging import Paging
from state.core import NotFound
from state.records import delete_variable, get_variable, record_event, set_variable
from state.views import list_variables_page

router = APIRouter(prefix="/variables", tags=["Variable"])


def _variable(session: DbSession, key: str) -> VariableResponse:
    variable = get_variable(session, key)
    if variable is None:
        raise NotFound(f"no variable named {key!r}")
    return variable_response(variable)


@router.get("")
def get_variables(
    _: CanRead, session: DbSession, page: Paging, variable_key_pattern: str | None = None
) -> VariableCollectionResponse:
    variables, total = list_variables_page(session, page, variable_key_pattern)
    return VariableCollectionResponse(
        variables=[variable_response(v) for v in variables], total_entries=total
    )


@router.get("/{variable_key}")
def get_variable_route(variable_key: str, _: CanRead, session: DbSession) -> VariableResponse:
    return _variable(session, variable_key)


@router.post("", status_code=status.HTTP_201_CREATED)
def post_variable(body: VariableBody, who: ActingEditor, session: DbSession) -> VariableResponse:
    body.refuse_unsupported()
    if get_variable(session, body.key) is not None:
        raise HTTPException(status.HTTP_409_CONFLICT, f"a variable named {body.key!r} exists")
    set_variable(session, body.key, body.text(), description=body.description)
    record_event(session, who, "post_variable", extra={"key": body.key})  # never its value
    session.flush()
    return _variable(session, body.key)


@router.patch("/{variable_key}")
def patch_variable(
    variable_key: str, body: VariableBody, who: ActingEditor, session: DbSession
) -> VariableResponse:
    existing = get_variable(session, variable_key)
    if existing is None:
        raise NotFound(f"no variable named {variable_key!r}")
    body.refuse_unsupported()
    if body.key != variable_key:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "the body's key differs from the path's")
    set_variable(session, variable_key, body.text(), existing.is_secret, body.description)
    record_event(session, who, "patch_variable", extra={"key": variable_key})
    session.flush()
    return _variable(session, variable_key)


@router.delete("/{variable_key}", status_code=status.HTTP_204_NO_CONTENT)
def delete_variable_route(variable_key: str, who: ActingEditor, session: DbSession) -> Response:
    if not delete_variable(session, variable_key):
        raise NotFound(f"no variable named {variable_key!r}")
    record_event(session, who, "delete_variable", extra={"key": variable_key})
    return Response(status_code=status.HTTP_204_NO_CONTENT)
