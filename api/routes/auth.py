"""Signing in: ``POST /auth/token`` for API clients, ``/auth/login`` for the pages.

The token route takes ``{"username", "password"}`` as JSON (as Airflow's simple auth manager)
or as a form (OAuth2's password flow, which the OpenAPI page's "Authorize" button uses) and
answers 201 with ``{"access_token": ...}``. The login page is a server-rendered form, posted with
its CSRF token; success keeps the user (name, id, token version) in the signed session cookie.

Both are throttled (``api.throttle``: 429 with ``Retry-After``) and check the password on the
hashing executor (``api.security.check_off_loop``), with no store connection held meanwhile:
the account is read in a statement of its own first. Signing out raises the user's token
version, which ends every session and token of theirs, on every API server.
"""

from __future__ import annotations

import json
from typing import Annotated
from urllib.parse import quote, urlsplit

from fastapi import APIRouter, Form, HTTPException, Request, status
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.concurrency import run_in_threadpool

from api.audit import client_of
from api.context import AppContext
from api.csrf import FormPost
from api.deps import Context, remember_in_session, session_holder
from api.security import TokenHolder, check_off_loop
from api.templating import render
from api.throttle import Throttled
from state.core import session_scope, statement_scope
from state.records import Actor, Origin, get_user, record_event, revoke_tokens

router = APIRouter(prefix="/auth", tags=["Auth"])


class LoginBody(BaseModel):
    """A field it does not name is refused (422), as every request body's."""

    model_config = ConfigDict(extra="forbid")

    username: str
    password: str


class LoginResponse(BaseModel):
    access_token: str


def _account(url: str, username: str) -> tuple[TokenHolder, str] | None:
    """The user named ``username`` and their password hash, read in a statement of its own."""
    with statement_scope(url) as session:
        user = get_user(session, username)
        if user is None:
            return None
        return TokenHolder(user.id, user.username, user.token_version), user.password_hash


async def _authenticate(
    request: Request, context: AppContext, username: str, password: str
) -> TokenHolder | None:
    """Whom the password opens; None when it opens nothing (one answer for both causes).

    ``Throttled`` when the user or the client has failed too often: no hash is computed then.
    """
    client = request.client.host if request.client else None
    attempt = context.throttle.begin(username, client)
    account = await run_in_threadpool(_account, context.url, username)
    if not await check_off_loop(password, account[1] if account else None) or account is None:
        return None
    context.throttle.succeeded(attempt)
    return account[0]


def _record_sign_in(url: str, actor: Actor, event: str, reason: str | None = None) -> None:
    """One row of the event log about a sign-in, in a transaction of its own (a refused one
    changes nothing else, and a sign-in holds no store connection while it hashes)."""
    with session_scope(url) as session:
        record_event(session, actor, event, extra={"reason": reason} if reason else None)


async def _signed_in(
    request: Request, context: AppContext, origin: Origin, username: str, outcome: str | None
) -> None:
    """Record how a sign-in went: ``outcome`` None for a success, else why it was refused."""
    actor = Actor(username, origin, client_of(request))
    event = _SIGN_IN_EVENTS[origin]
    if outcome is not None:
        event += "_failed"
    await run_in_threadpool(_record_sign_in, context.url, actor, event, outcome)


#: The event of a sign-in by each way in: the pages sign in, the API issues a token.
_SIGN_IN_EVENTS: dict[Origin, str] = {"ui": "login", "api": "create_token", "cli": "login"}


def _throttled(error: Throttled) -> HTTPException:
    headers = {"Retry-After": str(error.retry_after_seconds)}
    return HTTPException(status.HTTP_429_TOO_MANY_REQUESTS, str(error), headers=headers)


async def _credentials(request: Request) -> LoginBody:
    content_type = request.headers.get("content-type", "")
    try:
        if content_type.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
            form = await request.form()  # a form may carry more (OAuth2's grant_type...)
            return LoginBody.model_validate(
                {k: form[k] for k in ("username", "password") if k in form}
            )
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
async def create_token(request: Request, context: Context) -> LoginResponse:
    body = await _credentials(request)
    try:
        holder = await _authenticate(request, context, body.username, body.password)
    except Throttled as error:
        await _signed_in(request, context, "api", body.username, "throttled")
        raise _throttled(error) from None
    if holder is None:
        await _signed_in(request, context, "api", body.username, "invalid username or password")
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "invalid username or password")
    await _signed_in(request, context, "api", holder.username, None)
    return LoginResponse(access_token=context.tokens.issue(holder))


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
async def login(
    request: Request,
    context: Context,
    _: FormPost,
    username: Annotated[str, Form()],
    password: Annotated[str, Form()],
    next: Annotated[str, Form()] = "/",
) -> Response:
    try:
        holder = await _authenticate(request, context, username, password)
    except Throttled as error:
        await _signed_in(request, context, "ui", username, "throttled")
        page = {"next": _local(next), "error": f"{str(error).capitalize()}."}
        headers = {"Retry-After": str(error.retry_after_seconds)}
        reply = render(request, "login.html", page, status.HTTP_429_TOO_MANY_REQUESTS)
        reply.headers.update(headers)
        return reply
    if holder is None:
        await _signed_in(request, context, "ui", username, "invalid username or password")
        page = {"next": _local(next), "error": "Invalid username or password."}
        return render(request, "login.html", page, status.HTTP_401_UNAUTHORIZED)
    await _signed_in(request, context, "ui", holder.username, None)
    request.session.clear()  # nothing from before sign-in carries over (a planted token neither)
    remember_in_session(request, holder)
    return RedirectResponse(_local(next), status.HTTP_303_SEE_OTHER)


def _revoke(url: str, holder: TokenHolder, client: str | None) -> None:
    with session_scope(url) as session:
        revoke_tokens(session, holder.user_id, holder.version)
        record_event(session, Actor(holder.username, "ui", client), "logout")


@router.post("/logout", include_in_schema=False)
async def logout(request: Request, context: Context, _: FormPost) -> Response:
    """Sign out: every session and token of the user ends, here and on every other device."""
    holder = session_holder(request)
    if holder is not None:
        await run_in_threadpool(_revoke, context.url, holder, client_of(request))
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
