"""A request to the REST API names only the query parameters its route takes: 422 otherwise.

A misspelt filter (``?stat=failed`` for ``?state=failed``) was dropped, and the answer listed
every run as if no filter had been asked for. Now it is refused as FastAPI refuses an unknown
body field: a 422 naming the parameter, in FastAPI's validation-error shape.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute


def known_query_only(request: Request) -> None:
    """The dependency that refuses a query parameter the request's route does not declare."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    known = _query_names(route.dependant)
    unknown = [name for name in request.query_params if name not in known]
    if unknown:
        raise RequestValidationError(
            [
                {
                    "type": "extra_forbidden",
                    "loc": ("query", name),
                    "msg": f"unknown query parameter {name!r}",
                    "input": request.query_params[name],
                }
                for name in unknown
            ]
        )


def _query_names(dependant: Dependant) -> set[str]:
    names = {param.alias for param in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names
