"""The dependencies every route takes: the store session, the current user, the role needed.

- ``DbSession``: one session per request, committed when the route returns, rolled back when
  it raises (an ``HTTPException`` included: a refused request changes nothing). The commit
  happens before the response is sent (``scope="function"``): a client that reads right after
  a write sees it, and a commit that fails is the request's error, not a lost write.
- ``CurrentUser``: the user of the request's ``Authorization: Bearer`` token; for reads only
  (GET, HEAD) the UI's signed session cookie counts too, so a page's live parts can poll the
  API. A write with a cookie alone is refused: only forms, with their CSRF token, write so.
  A token or cookie names the user's id and token version (``api.security.TokenHolder``): a
  deleted user, or one whose version has moved on (sign-out, new password, new role), is 401.
  The user is read in a statement of its own, in the dependency's thread: the request's store
  connection is first taken by the route, in the route's thread (``api/concurrency.py``).
- ``require(Role.OP)``: the user, if their role has that right; 403 otherwise.
- ``PageUser``: for the pages, the user of the session cookie; a browser without one is sent
  to ``/auth/login`` (``SignInRequired``, answered by the app with a redirect back afterwards).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from api.context import AppContext
from api.security import InvalidToken, TokenHolder
from state.core import session_scope, statement_scope
from state.records import Role, get_user_by_id

#: What the session cookie keeps of its user: the name (shown by the pages), id and version.
SESSION_USER = "user"
SESSION_USER_ID = "uid"
SESSION_VERSION = "ver"
_SAFE_METHODS = frozenset({"GET", "HEAD"})
_bearer = HTTPBearer(auto_error=False, description="A token from POST /auth/token")


def app_context(request: Request) -> AppContext:
    context: AppContext = request.app.state.tradewind
    return context


Context = Annotated[AppContext, Depends(app_context)]


def db_session(context: Context) -> Iterator[Session]:
    with session_scope(context.url) as session:
        yield session


DbSession = Annotated[Session, Depends(db_session, scope="function")]


@dataclass(frozen=True)
class Principal:
    """Who makes the request, and the rights their role gives."""

    username: str
    role: Role

    def may(self, needed: Role) -> bool:
        return self.role.may(needed)


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(
        status.HTTP_401_UNAUTHORIZED, detail, headers={"WWW-Authenticate": "Bearer"}
    )


def remember_in_session(request: Request, holder: TokenHolder) -> None:
    """Sign the browser in as ``holder`` (the session cookie names them as a token does)."""
    request.session[SESSION_USER] = holder.username
    request.session[SESSION_USER_ID] = holder.user_id
    request.session[SESSION_VERSION] = holder.version


def session_holder(request: Request) -> TokenHolder | None:
    """Whom the session cookie names; None without one (or one from before versions)."""
    if "session" not in request.scope:
        return None
    name = request.session.get(SESSION_USER)
    user_id = request.session.get(SESSION_USER_ID)
    version = request.session.get(SESSION_VERSION)
    if isinstance(name, str) and isinstance(user_id, int) and isinstance(version, int):
        return TokenHolder(user_id, name, version)
    return None


def requesting_holder(
    request: Request, context: AppContext, credentials: HTTPAuthorizationCredentials | None
) -> TokenHolder:
    """Whom a request authenticates as; 401 when it carries nothing valid."""
    if credentials is not None:
        try:
            return context.tokens.holder(credentials.credentials)
        except InvalidToken as error:
            raise _unauthorized(str(error)) from None
    holder = session_holder(request)
    if holder is not None and request.method in _SAFE_METHODS:
        return holder
    raise _unauthorized("not authenticated: send Authorization: Bearer <token from /auth/token>")


def principal_of(context: AppContext, holder: TokenHolder) -> Principal | str:
    """The user ``holder`` names, if their token is still honoured; otherwise why not."""
    with statement_scope(context.url) as session:
        user = get_user_by_id(session, holder.user_id)
        if user is None or user.username != holder.username:
            return f"user {holder.username!r} no longer exists"
        if user.token_version != holder.version:
            return (
                f"the sign-in of user {holder.username!r} has ended (signed out, or the "
                "password or role changed): sign in again"
            )
        return Principal(user.username, Role(user.role))


def current_user(
    request: Request,
    context: Context,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    found = principal_of(context, requesting_holder(request, context, credentials))
    if isinstance(found, str):
        raise _unauthorized(found)
    return found


CurrentUser = Annotated[Principal, Depends(current_user)]


def require(needed: Role) -> Callable[[Principal], Principal]:
    """A dependency that lets through users whose role has the rights of ``needed``."""

    def check(user: CurrentUser) -> Principal:
        if not user.may(needed):
            detail = f"user {user.username!r} ({user.role}) may not do this: it needs {needed}"
            raise HTTPException(status.HTTP_403_FORBIDDEN, detail)
        return user

    return check


CanRead = Annotated[Principal, Depends(require(Role.VIEWER))]
CanRun = Annotated[Principal, Depends(require(Role.USER))]  # trigger, clear, mark
CanEdit = Annotated[Principal, Depends(require(Role.OP))]  # pools, variables, connections
CanAdmin = Annotated[Principal, Depends(require(Role.ADMIN))]  # users


class SignInRequired(Exception):
    """A page asked for by a browser that has not signed in (the app redirects it)."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


def page_user(request: Request, context: Context) -> Principal:
    holder = session_holder(request)
    found = principal_of(context, holder) if holder is not None else None
    if not isinstance(found, Principal):
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise SignInRequired(target)
    return found


PageUser = Annotated[Principal, Depends(page_user)]


class PageRefused(HTTPException):
    """A refusal on a page (403, 404): the app answers it with a page, not JSON."""


def require_on_page(needed: Role) -> Callable[[Principal], Principal]:
    """As ``require``, for a page: the session's user, if their role has the rights needed."""

    def check(user: PageUser) -> Principal:
        if not user.may(needed):
            detail = f"user {user.username!r} ({user.role}) may not do this: it needs {needed}"
            raise PageRefused(status.HTTP_403_FORBIDDEN, detail)
        return user

    return check


PageCanRun = Annotated[Principal, Depends(require_on_page(Role.USER))]
PageCanEdit = Annotated[Principal, Depends(require_on_page(Role.OP))]
PageCanAdmin = Annotated[Principal, Depends(require_on_page(Role.ADMIN))]
