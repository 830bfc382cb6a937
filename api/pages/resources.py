"""``/pools``, ``/variables``, ``/connections``: lists anyone signed in reads; forms to
create, edit and delete them for the op role (CSRF-checked, as every form).

Secrets never reach the page: a connection's password is never rendered (its field is
left empty, and an empty field keeps the stored one), a secret variable's value and the
sensitive keys of a connection's extra show as ``***`` (a ``***`` posted back keeps the
stored value). A bad field re-renders the page with one line naming it, changing nothing.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request, status
from fastapi.responses import HTMLResponse, Response

from api.audit import page_actor
from api.csrf import FormPost
from api.deps import DbSession, PageCanEdit, PageRefused, PageUser, Principal
from api.models.resources import MASK
from api.pages.common import Pager, back_to, flash
from api.templating import render
from state.core import Connection
from state.engine import PoolRefused, delete_pool, set_pool
from state.records import (
    Role,
    delete_connection,
    delete_variable,
    get_connection,
    get_variable,
    put_connection,
    record_event,
    set_variable,
)
from state.views import list_connections_page, list_pools, list_variables_page
from tradewind.connections import is_sensitive

router = APIRouter()
PAGE_SIZE = 50
Text = Annotated[str, Form()]


def _listing(
    request: Request, session: DbSession, user: Principal, kind: str, **extra: Any
) -> dict[str, Any]:
    pager = Pager.of(request, PAGE_SIZE)
    lister = {
        "pools": list_pools,
        "variables": list_variables_page,
        "connections": list_connections_page,
    }[kind]
    rows, total = lister(session, pager.page)
    return {
        "rows": rows,
        "pager": pager.counted(total),
        "may_edit": user.may(Role.OP),
        "editing": None,
        "shown": shown_value,
        "masked_extra": masked_extra,
        "error": None,
    } | extra


def _refused(
    request: Request, session: DbSession, user: Principal, kind: str, error: str
) -> Response:
    context = _listing(request, session, user, kind, error=error)
    return render(request, f"pages/{kind}.html", context, status.HTTP_400_BAD_REQUEST)


# Pools.


@router.get("/pools", response_class=HTMLResponse)
def pools_page(request: Request, session: DbSession, user: PageUser) -> Response:
    editing = request.query_params.get("edit")
    return render(
        request, "pages/pools.html", _listing(request, session, user, "pools", editing=editing)
    )


@router.post("/pools")
def save_pool(
    request: Request,
    session: DbSession,
    user: PageCanEdit,
    _csrf: FormPost,
    name: Text,
    slots: Text,
) -> Response:
    name = name.strip()
    if not name:
        return _refused(request, session, user, "pools", "name: give the pool a name")
    try:
        set_pool(session, name, int(slots))
    except ValueError as error:  # PoolRefused is one; int() of a non-number the other
        reason = (
            str(error) if isinstance(error, PoolRefused) else f"{slots!r} is not a whole number"
        )
        return _refused(request, session, user, "pools", f"slots: {reason}")
    extra = {"pool": name, "slots": int(slots)}
    record_event(session, page_actor(request, user), "post_pool", extra=extra)
    flash(request, f"Pool {name} has {int(slots)} slots.")
    return back_to("/pools")


@router.post("/pools/{name}/delete")
def remove_pool(
    request: Request, name: str, session: DbSession, user: PageCanEdit, _csrf: FormPost
) -> Response:
    try:
        deleted = delete_pool(session, name)
    except PoolRefused as error:
        return _refused(request, session, user, "pools", str(error))
    if deleted:
        record_event(session, page_actor(request, user), "delete_pool", extra={"pool": name})
    flash(request, f"Pool {name} deleted." if deleted else f"No pool {name}.")
    return back_to("/pools")


# Variables.


def shown_value(key: str, value: str, is_secret: bool) -> str:
    return MASK if is_secret or is_sensitive(key) else value


@router.get("/variables", response_class=HTMLResponse)
def variables_page(request: Request, session: DbSession, user: PageUser) -> Response:
    editing = (
        get_variable(session, request.query_params.get("edit", "")) if user.may(Role.OP) else None
    )
    context = _listing(request, session, user, "variables", editing=editing)
    return render(request, "pages/variables.html", context)


@router.post("/variables")
def save_variable(
    request: Request,
    session: DbSession,
    user: PageCanEdit,
    _csrf: FormPost,
    key: Text,
    value: Annotated[str, Form()] = "",
    is_secret: Annotated[bool, Form()] = False,
) -> Response:
    key = key.strip()
    if not key:
        return _refused(request, session, user, "variables", "key: give the variable a key")
    existing = get_variable(session, key)
    if (
        existing is not None
        and value in ("", MASK)
        and shown_value(key, existing.value, existing.is_secret) == MASK
    ):
        value = existing.value  # a secret left as it was shown: keep it
    set_variable(session, key, value, is_secret)
    event = "post_variable" if existing is None else "patch_variable"
    record_event(session, page_actor(request, user), event, extra={"key": key})  # not its value
    flash(request, f"Variable {key} saved.")
    return back_to("/variables")


@router.post("/variables/{key}/delete")
def remove_variable(
    request: Request, key: str, session: DbSession, user: PageCanEdit, _csrf: FormPost
) -> Response:
    deleted = delete_variable(session, key)
    if deleted:
        record_event(session, page_actor(request, user), "delete_variable", extra={"key": key})
    flash(request, f"Variable {key} deleted." if deleted else f"No variable {key}.")
    return back_to("/variables")


# Connections.


def masked_extra(connection: Connection) -> str:
    extra = connection.extra or {}
    return (
        json.dumps({k: MASK if is_sensitive(k) else v for k, v in extra.items()}) if extra else ""
    )


class BadConnection(ValueError):
    """A connection form field that cannot be stored as it is."""


def _connection_fields(form: dict[str, str], existing: Connection | None) -> dict[str, Any]:
    port_text = form.get("port", "").strip()
    if port_text and not port_text.isdigit():
        raise BadConnection(f"port: {port_text!r} is not a port number")
    try:
        extra = json.loads(form["extra"]) if form.get("extra", "").strip() else {}
    except json.JSONDecodeError as error:
        raise BadConnection(f"extra: not JSON ({error.msg})") from None
    if not isinstance(extra, dict):
        raise BadConnection("extra: must be a JSON object")
    old_extra = (existing.extra or {}) if existing else {}
    extra = {k: old_extra.get(k) if v == MASK else v for k, v in extra.items()}
    password = form.get("password") or (existing.password if existing else None)
    return {
        "conn_type": form.get("conn_type", "").strip() or "generic",
        "host": form.get("host") or None,
        "login": form.get("login") or None,
        "password": password,
        "schema": form.get("schema") or None,
        "port": int(port_text) if port_text else None,
        "extra": extra,
    }


@router.get("/connections", response_class=HTMLResponse)
def connections_page(request: Request, session: DbSession, user: PageUser) -> Response:
    editing = (
        get_connection(session, request.query_params.get("edit", "")) if user.may(Role.OP) else None
    )
    context = _listing(request, session, user, "connections", editing=editing)
    return render(request, "pages/connections.html", context)


@router.post("/connections")
async def save_connection(
    request: Request, session: DbSession, user: PageCanEdit, _csrf: FormPost
) -> Response:
    form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
    conn_id = form.get("conn_id", "").strip()
    if not conn_id:
        return _refused(
            request, session, user, "connections", "connection id: give the connection an id"
        )
    existing = get_connection(session, conn_id)
    try:
        fields = _connection_fields(form, existing)
    except BadConnection as error:
        return _refused(request, session, user, "connections", str(error))
    put_connection(session, conn_id, **fields)
    event = "post_connection" if existing is None else "patch_connection"
    extra = {"connection_id": conn_id, "conn_type": fields["conn_type"]}  # no password, no extra
    record_event(session, page_actor(request, user), event, extra=extra)
    flash(request, f"Connection {conn_id} saved.")
    return back_to("/connections")


@router.post("/connections/{conn_id}/delete")
def remove_connection(
    request: Request, conn_id: str, session: DbSession, user: PageCanEdit, _csrf: FormPost
) -> Response:
    if not delete_connection(session, conn_id):
        raise PageRefused(status.HTTP_404_NOT_FOUND, f"no connection {conn_id!r}")
    extra = {"connection_id": conn_id}
    record_event(session, page_actor(request, user), "delete_connection", extra=extra)
    flash(request, f"Connection {conn_id} deleted.")
    return back_to("/connections")
