"""Who acts, for the event log: each write route takes an ``Acting…`` dependency instead of the
bare role check, and hands the ``Actor`` it gets to ``state.records.record_event``.

``ActingRunner`` lets through the users ``CanRun`` does (``ActingEditor``: ``CanEdit``,
``ActingAdmin``: ``CanAdmin``) and says who they are, that they came in by the API, and from
which address. The ``Page…`` ones do the same for the pages' forms, as ``ui``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Request

from api.deps import Principal, require, require_on_page
from state.core import DagRun, TaskInstance
from state.records import About, Actor, Origin, Role


def client_of(request: Request) -> str | None:
    """The address the request came from (the proxy's, unless the server trusts its headers)."""
    return request.client.host if request.client else None


def about_run(run: DagRun) -> About:
    """What an event about ``run`` names."""
    return About(dag_id=run.dag_id, run_id=run.run_id, logical_date=run.logical_date)


def about_ti(ti: TaskInstance, logical_date: dt.datetime | None = None) -> About:
    """What an event about a task instance (and its current try) names."""
    return About(ti.dag_id, ti.run_id, ti.task_id, ti.map_index, ti.try_number, logical_date)


def page_actor(request: Request, user: Principal) -> Actor:
    """The actor of a page's form, from the user the page already checked."""
    return Actor(user.username, "ui", client_of(request))


def _acting(needed: Role, origin: Origin) -> Callable[..., Actor]:
    check = require(needed) if origin == "api" else require_on_page(needed)

    # ``check`` as a default: a string annotation naming a local would not resolve.
    def actor(request: Request, user: Principal = Depends(check)) -> Actor:  # noqa: B008
        return Actor(user.username, origin, client_of(request))

    return actor


ActingRunner = Annotated[Actor, Depends(_acting(Role.USER, "api"))]
ActingEditor = Annotated[Actor, Depends(_acting(Role.OP, "api"))]
ActingAdmin = Annotated[Actor, Depends(_acting(Role.ADMIN, "api"))]
PageActingRunner = Annotated[Actor, Depends(_acting(Role.USER, "ui"))]
PageActingEditor = Annotated[Actor, Depends(_acting(Role.OP, "ui"))]
PageActingAdmin = Annotated[Actor, Depends(_acting(Role.ADMIN, "ui"))]
