"""``/users``: who may sign in and with which role; admin only, page and forms alike.

A password is hashed (argon2, off the event loop as the sign-in does) before it reaches the
store; leaving it empty when editing keeps the old one. An admin cannot delete themselves or
take their own admin role away, so a fleet never loses its last way in by one click.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request, status
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from api.audit import page_actor
from api.csrf import FormPost
from api.deps import DbSession, PageCanAdmin, Principal
from api.pages.common import Pager, back_to, flash
from api.security import hash_password
from api.templating import render
from state.records import (
    NoSuchUser,
    Role,
    UserExists,
    create_user,
    delete_user,
    get_user,
    list_users_page,
    record_event,
    set_password_hash,
    set_role,
)

router = APIRouter()
PAGE_SIZE = 50


def _page(
    request: Request, session: DbSession, user: Principal, error: str | None = None
) -> Response:
    pager = Pager.of(request, PAGE_SIZE)
    users, total = list_users_page(session, pager.limit, pager.page.offset)
    editing = get_user(session, request.query_params.get("edit", ""))
    context = {
        "rows": users,
        "pager": pager.counted(total),
        "roles": [role.value for role in Role],
        "editing": editing,
        "me": user.username,
        "error": error,
    }
    code = status.HTTP_400_BAD_REQUEST if error else status.HTTP_200_OK
    return render(request, "pages/users.html", context, code)


@router.get("/users", response_class=HTMLResponse)
def users_page(request: Request, session: DbSession, user: PageCanAdmin) -> Response:
    return _page(request, session, user)


def _role(text: str) -> Role | None:
    return Role(text) if text in {role.value for role in Role} else None


@router.post("/users")
async def save_user(
    request: Request,
    session: DbSession,
    user: PageCanAdmin,
    _csrf: FormPost,
    username: Annotated[str, Form()],
    role: Annotated[str, Form()],
    password: Annotated[str, Form()] = "",
    existing: Annotated[bool, Form()] = False,
) -> Response:
    username, chosen = username.strip(), _role(role)
    if not username:
        return _page(request, session, user, "username: give the user a name")
    if chosen is None:
        return _page(request, session, user, f"role: {role!r} is not one of {', '.join(Role)}")
    if username == user.username and chosen != Role.ADMIN:
        return _page(request, session, user, "role: you cannot take your own admin role away")
    if not existing and not password:
        return _page(request, session, user, "password: a new user needs one")
    hashed = await run_in_threadpool(hash_password, password) if password else None
    try:
        if existing:
            set_role(session, username, chosen)
            if hashed:
                set_password_hash(session, username, hashed)
        else:
            create_user(session, username, hashed or "", chosen)
    except (UserExists, NoSuchUser) as error:
        return _page(request, session, user, str(error))
    event = "patch_user" if existing else "create_user"
    extra = {"username": username, "role": chosen, "credentials_changed": bool(hashed)}
    record_event(session, page_actor(request, user), event, extra=extra)
    flash(request, f"User {username} saved ({chosen}).")
    return back_to("/users")


@router.post("/users/{username}/delete")
def remove_user(
    request: Request, username: str, session: DbSession, user: PageCanAdmin, _csrf: FormPost
) -> Response:
    if username == user.username:
        return _page(request, session, user, "you cannot delete yourself")
    delete_user(session, username)
    extra = {"username": username}
    record_event(session, page_actor(request, user), "delete_user", extra=extra)
    flash(request, f"User {username} deleted.")
    return back_to("/users")
