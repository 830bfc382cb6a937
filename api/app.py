"""The API server's app: ``create_app(settings)`` builds it; ``tradewind api-server`` serves it.

What is wired here, once: the REST API's routers under ``/api/v2`` (Airflow 3.3's paths), the
auth routes, the signed session cookie (Starlette's ``SessionMiddleware``, keyed with the same
secret as the tokens, ``Secure`` when ``TRADEWIND_API_COOKIE_SECURE``), a bound on request
bodies, the bound on requests in flight (``api.concurrency``, outermost), the static files, and
one handler per kind of refusal from ``state/`` so routes raise what the store raises and never
translate it. The UI's pages (``api.pages``) are one router: they get the session, the current
user (``api.deps``), CSRF (``api.csrf``) and templates (``api.templating``) from the same places.
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

from fastapi import Depends, FastAPI, Request, status
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import DataError
from starlette.middleware.sessions import SessionMiddleware

from api.bodies import BodyCheck
from api.concurrency import ConcurrencyLimit
from api.context import AppContext, Purgers
from api.deps import PageRefused, SignInRequired
from api.docs import DOCS_ASSETS, api_docs, api_redoc
from api.headers import SecurityHeaders
from api.limits import BodyLimit
from api.logs import BadLogToken
from api.openapi import refusal, with_refusals
from api.pages import router as pages_router
from api.pages.common import refusal_page
from api.routes import (
    assets,
    auth,
    backfills,
    connections,
    dag_extras,
    dag_run_bulk,
    dag_runs,
    dags,
    event_logs,
    hitl,
    metrics,
    monitor,
    pools,
    state_store,
    task_instance_actions,
    task_instance_writes,
    task_instances,
    tasks,
    variables,
    xcoms,
)
from api.strict_query import known_query_only
from api.structure import BadConf
from api.templating import STATIC_DIR
from state.core import BadOrdering, IllegalTransition, NotFound, SecretUnreadable
from state.engine import (
    BackfillEnded,
    BadScope,
    InvalidBackfill,
    MarkerDepthExceeded,
    PoolRefused,
    RunExists,
    UnknownDag,
    UnknownTask,
)
from state.records import BadMark, BadNote, NoSuchDag, NoSuchUser, UserExists
from tradewind.ids import InvalidId
from tradewind.settings import Settings

API_PREFIX = "/api/v2"
SESSION_COOKIE = "tradewind_session"

#: Each refusal ``state/`` (or a helper) raises, and the HTTP status it is answered with.
REFUSALS: dict[type[Exception], int] = {
    NotFound: status.HTTP_404_NOT_FOUND,
    UnknownDag: status.HTTP_404_NOT_FOUND,
    NoSuchDag: status.HTTP_404_NOT_FOUND,
    NoSuchUser: status.HTTP_404_NOT_FOUND,
    BadOrdering: status.HTTP_400_BAD_REQUEST,
    BadConf: status.HTTP_400_BAD_REQUEST,
    InvalidId: status.HTTP_400_BAD_REQUEST,
    BadLogToken: status.HTTP_400_BAD_REQUEST,
    BadMark: status.HTTP_400_BAD_REQUEST,
    BadNote: status.HTTP_400_BAD_REQUEST,
    InvalidBackfill: status.HTTP_400_BAD_REQUEST,
    PoolRefused: status.HTTP_400_BAD_REQUEST,
    RunExists: status.HTTP_409_CONFLICT,
    UserExists: status.HTTP_409_CONFLICT,
    IllegalTransition: status.HTTP_409_CONFLICT,
    BackfillEnded: status.HTTP_409_CONFLICT,
    MarkerDepthExceeded: status.HTTP_400_BAD_REQUEST,
    BadScope: status.HTTP_400_BAD_REQUEST,
    UnknownTask: status.HTTP_404_NOT_FOUND,
    # A secret stored under a key this server lacks: its operator's to fix, named in one line.
    SecretUnreadable: status.HTTP_500_INTERNAL_SERVER_ERROR,
}

# Literal paths under a task instance (…/dependencies, …/xcomEntries) before the routers whose
# paths end in a parameter, which would otherwise take them.
_API_ROUTERS = (
    monitor,
    dags,
    tasks,
    dag_runs,
    dag_run_bulk,
    task_instance_actions,
    task_instance_writes,
    hitl,
    xcoms,
    state_store,
    task_instances,
    pools,
    variables,
    connections,
    dag_extras,
    assets,
    backfills,
    event_logs,
)


def _refusal(code: int) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def answer(_request: Request, error: Exception) -> Response:
        return JSONResponse({"detail": str(error)}, status_code=code)

    return answer


def create_app(settings: Settings, purgers: Purgers | None = None) -> FastAPI:
    """The app for the store ``settings`` names; ``purgers`` delete objects a clear discards."""
    context = AppContext.build(settings, purgers)
    app = FastAPI(
        lifespan=_freeze_what_startup_made,
        title="Tradewind",
        summary="Airflow 3's REST API v2, served from Tradewind's SQL store",
        version=monitor.version_text(),
        docs_url=None,  # served by api.docs, from a package's files, no CDN
        redoc_url=None,
    )
    app.state.tradewind = context
    strict = [Depends(known_query_only)]  # a misspelt filter is refused, never ignored
    for router_module in _API_ROUTERS:
        app.include_router(router_module.router, prefix=API_PREFIX, dependencies=strict)
    app.include_router(auth.router, responses={401: refusal(401)})  # a wrong password
    to_sign_in: dict[int | str, dict[str, Any]] = {307: {"description": "To the sign-in pages"}}
    app.include_router(auth.v2_router, prefix=API_PREFIX, dependencies=strict, responses=to_sign_in)
    for error, code in REFUSALS.items():
        app.add_exception_handler(error, _refusal(code))
    app.include_router(pages_router)
    app.include_router(metrics.router)  # /metrics, beside the API: where Prometheus looks
    app.add_exception_handler(SignInRequired, _to_sign_in)
    app.add_exception_handler(PageRefused, _page_refused)
    app.add_exception_handler(DataError, _unstorable)
    app.mount("/static/docs", StaticFiles(directory=DOCS_ASSETS), name="docs-assets")
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app.add_api_route("/docs", api_docs, include_in_schema=False)
    app.add_api_route("/redoc", api_redoc, include_in_schema=False)
    app.add_middleware(
        SessionMiddleware,
        secret_key=context.tokens.key,
        session_cookie=SESSION_COOKIE,
        max_age=int(settings.api_token_lifetime_seconds),
        same_site="lax",
        https_only=settings.api_cookie_secure,
    )
    app.openapi = with_refusals(app)  # type: ignore[method-assign]
    app.add_middleware(BodyCheck)
    app.add_middleware(BodyLimit, max_bytes=settings.api_max_body_bytes)
    _limit_concurrency(app, settings)
    app.add_middleware(SecurityHeaders)  # the last added is the outermost: on every answer
    return app


def _limit_concurrency(app: FastAPI, settings: Settings) -> None:
    """Outermost: a request past the bound is refused before any other middleware runs."""
    app.add_middleware(
        ConcurrencyLimit,
        max_concurrency=settings.api_max_concurrency,
        queue_timeout_seconds=settings.api_queue_timeout_seconds,
    )


@asynccontextmanager
async def _freeze_what_startup_made(_app: FastAPI) -> AsyncIterator[None]:
    # The app, its routes and every module imported (FastAPI, SQLAlchemy, Jinja: about 260,000
    # objects) live as long as the server. Left to the collector, each of its full passes walked
    # them all: 165 ms, twice in 250 grid requests, inside whichever request set it off.
    # Frozen, a full pass walks what requests made since.
    gc.collect()
    gc.freeze()
    yield


async def _unstorable(_request: Request, error: Exception) -> Response:
    """A value the database cannot hold (PostgreSQL text cannot hold a NUL, for one): 400.

    Only the database's one-line reason is shown: the statement and its parameters (a
    password among them, maybe) never leave the server.
    """
    reason = str(getattr(error, "orig", error)).strip().splitlines()[0]
    detail = f"the store cannot hold a value of this request: {reason}"
    return JSONResponse({"detail": detail}, status_code=status.HTTP_400_BAD_REQUEST)


async def _page_refused(request: Request, error: Exception) -> Response:
    if not isinstance(error, PageRefused):
        raise error
    return refusal_page(request, error)


async def _to_sign_in(_request: Request, error: Exception) -> Response:
    path = error.path if isinstance(error, SignInRequired) else "/"
    return RedirectResponse(f"/auth/login?next={quote(path)}", status.HTTP_303_SEE_OTHER)


__all__ = ["API_PREFIX", "Purgers", "create_app"]
