"""The OpenAPI document names every refusal a route can answer, as Airflow's file does.

FastAPI documents a route's success and, when it takes parameters, its 422. The refusals come
from elsewhere (the auth dependency, ``state/``'s exceptions the app maps, the body bounds), so
they are derived here, once, from what each operation of the document takes; schemathesis's
status-code check (``tests/api/test_schemathesis.py``) fails when an answer is missing:

- 401 and 403: the operation needs a bearer token (its ``security``).
- 404: its path or its body names something (a DAG, a run, an asset...) that may not exist.
- 400: it takes parameters or a body: a value the store cannot hold, an unknown ordering, a
  token not given out, an id off its pattern, a body refused by ``api.bodies``.
- 413: it takes a body (``api.limits``).
- 409: it creates or changes something (POST, PATCH, PUT) that may exist already or be in a
  state that forbids the change.
- 422: it takes a body of a shape it checks itself (FastAPI declares the others).
- 429: the token route, throttled per user and per client (``api.throttle``).
- 503: every operation: past the server's own concurrency limit (``api.concurrency``).

Every refusal's body is ``{"detail": "..."}`` (``HTTPExceptionResponse``, Airflow's name).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel

SCHEMA_NAME = "HTTPExceptionResponse"
DESCRIPTIONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    413: "Content Too Large",
    422: "Unprocessable Content",
    429: "Too Many Requests",
    503: "Service Unavailable",
}
#: The paths that count failed sign-ins (``api.routes.auth``).
_THROTTLED = frozenset({"/auth/token"})
_CHANGES = frozenset({"post", "patch", "put"})


class HTTPExceptionResponse(BaseModel):
    """A refusal: one line saying what was wrong."""

    detail: str | dict[str, Any]


def refusal(code: int) -> dict[str, Any]:
    """The OpenAPI response object of the refusal ``code``."""
    schema = {"$ref": f"#/components/schemas/{SCHEMA_NAME}"}
    return {"description": DESCRIPTIONS[code], "content": {"application/json": {"schema": schema}}}


def with_refusals(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """``app.openapi`` that adds each operation's refusals to FastAPI's document."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        document = build()  # FastAPI's, built once and cached on the app
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        if SCHEMA_NAME not in schemas:
            schemas[SCHEMA_NAME] = HTTPExceptionResponse.model_json_schema()
            for path, path_item in document["paths"].items():
                for method, operation in path_item.items():
                    for code in refusal_codes(method, operation, path):
                        operation["responses"].setdefault(str(code), refusal(code))
        return document

    return openapi


def refusal_codes(method: str, operation: dict[str, Any], path: str = "") -> list[int]:
    """The refusals of ``operation``, by the rules of this module's docstring."""
    places = {parameter["in"] for parameter in operation.get("parameters", [])}
    takes_body = "requestBody" in operation
    codes: set[int] = set()
    if operation.get("security"):
        codes |= {401, 403}
    if "path" in places or takes_body:
        codes.add(404)
    if places or takes_body:
        codes.add(400)
    if takes_body:
        codes |= {413, 422}
    if method in _CHANGES:
        codes.add(409)
    if path in _THROTTLED:
        codes.add(429)
    codes.add(503)
    return sorted(codes)
