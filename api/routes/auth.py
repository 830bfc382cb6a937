"""Signing in: ``POST /auth/token`` for API clients, ``/auth/login`` for the pages.

The token route takes ``{"username", "password"}`` as JSON (as Airflow's simple auth manager)
or as a form (OAuth2's password flow, which the OpenAPI page's "Authorize" button uses) and
answers 201 with ``{"access_token": ...}``. The login page is a server-rendered form, posted with
its CSRF token; success keeps the user's name in the signed session cookie.
"""

from __future__ import annotations

import json
from typing import Annotated
from urllib.parse import quote, urlsplit

from fastapi import APIRouter, Form, HTTPException, Request, status
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel, ValidationError
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from api.csrf import FormPost
from api.deps import SESSION_USER, Context, DbSession
from api.security import check_password
from api.templating import render
from state.records import get_user

router = APIRouter(prefix="/auth", tags=["Auth"])


class LoginBody(BaseModel):
    username: str
    password: str


class LoginResponse(BaseModel):
    access_token: str


def _authenticate(session: Session, username: str, password: str) -> str | None:
    """The user's name if the password is theirs; None otherwise (one answer for both)."""
    user = get_user(session, username)
    if check_password(password, user.password_hash if user else None) and user:
        return user.username
    return None


async def _credentials(request: Request) -> LoginBody:
    content_type = request.headers.get("content-type", "")
    try:
        if content_type.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
            form = await request.form()
            return LoginBody.model_validate(dict(form))
        return LoginBody.model_validate(json.loads(await request.body()))
    except (ValidationError, json.JSONDecodeError, UnicodeDecodeError):
        detail = 'send {"username": ..., "password": ...} as JSON or as a form'
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail) from None


@router.post(
    "/token",
    status_code=status.HTTP_201_CREATED,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": LoginBody.model_json_schema()}},
        }
    },
)
async def create_token(request: Request, context: Context, session: DbSession) -> LoginResponse:
    body = await _credentials(request)
    # argon2 takes tens of milliseconds on purpose: off the event loop, as the query is.
    username = await run_in_threadpool(_authenticate, session, body.username, body.password)
    if username is None:
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "invalid username or password")
    return LoginResponse(access_token=context.tokens.issue(username))


def _local(target: str | None) -> str:
    """Where to go after signing in: a path of this server only (no open redirect)."""
    if target is None or "\\" in target or target.startswith("//"):
        return "/"  # browsers read "/\\host" and "//host" as another host
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not parts.path.startswith("/"):
        return "/"
    return target


@router.get("/login", response_class=HTMLResponse, include_in_schema=False)
def login_page(request: Request, next: str | None = None) -> Response:
    return render(request, "login.html", {"next": _local(next), "error": None})


@router.post("/login", include_in_schema=False)
def login(
    request: Request,
    session: DbSession,
    _: FormPost,
    username: Annotated[str, Form()],
    password: Annotated[str, Form()],
    next: Annotated[str, Form()] = "/",
) -> Response:
    name = _authenticate(session, username, password)
    if name is None:
        context = {"next": _local(next), "error": "Invalid username or password."}
        return render(request, "login.html", context, status.HTTP_401_UNAUTHORIZED)
    request.session.clear()  # nothing from before sign-in carries over (a planted token neither)
    request.session[SESSION_USER] = name
    return RedirectResponse(_local(next), status.HTTP_303_SEE_OTHER)


@router.post("/logout", include_in_schema=False)
def logout(request: Request, _: FormPost) -> Response:
    request.session.clear()
    return RedirectResponse("/auth/login", status.HTTP_303_SEE_OTHER)


#: Airflow's ``/api/v2/auth/login`` and ``/logout``: they send a browser to the sign-in pages.
v2_router = APIRouter(prefix="/auth", tags=["Login"])


@v2_router.get("/login")
def login_redirect(next: str | None = None) -> RedirectResponse:
    target = _local(next)
    return RedirectResponse(f"/auth/login?next={quote(target)}", status.HTTP_307_TEMPORARY_REDIRECT)


@v2_router.get("/logout")
def logout_redirect() -> RedirectResponse:
    """The sign-out form (a CSRF-checked post) is on the pages; this sends the browser there."""
    return RedirectResponse("/", status.HTTP_307_TEMPORARY_REDIRECT)
