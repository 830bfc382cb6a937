"""Who acts, for the event log: each write route takes an ``Acting…`` dependency instead of the
bare role check, and hands the ``Actor`` it gets to ``state.records.record_event``.

``ActingRunner`` lets through the users ``CanRun`` does (``ActingEditor``: ``CanEdit``,
``ActingAdmin``: ``CanAdmin``) and says who they are, that they came in by the API, and from
which address. The ``Page…`` ones do the same for the pages' forms, as ``ui``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from api.deps import (
    CanAdmin,
    CanEdit,
    CanRun,
    PageCanAdmin,
    PageCanEdit,
    PageCanRun,
    Principal,
)
from state.core import DagRun, TaskInstance
from state.engine import Answered, Plan, answer
from state.records import About, Actor, Origin, record_event


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


def about_tis(tis: Iterable[TaskInstance], logical_date: dt.datetime | None) -> list[About]:
    """One ``About`` per task of ``tis``: a task instance's own, or, for a mapped task's many,
    the task's (no map index): a clear of 2,000 mapped instances is one event, not 2,000."""
    by_task: dict[str, list[TaskInstance]] = {}
    for ti in tis:
        by_task.setdefault(ti.task_id, []).append(ti)
    abouts = []
    for task_id, of_task in by_task.items():
        if len(of_task) == 1:
            abouts.append(about_ti(of_task[0], logical_date))
        else:
            first = of_task[0]
            abouts.append(About(first.dag_id, first.run_id, task_id, None, None, logical_date))
    return abouts


def record_plan(
    session: Session,
    who: Actor,
    event: str,
    plan: Plan,
    tis: Iterable[TaskInstance],
    extra: Mapping[str, Any] | None = None,
) -> None:
    """The event log's rows of an applied clear or mark: one per task of ``tis`` (a mapped
    task's many, one) with its run's logical date, read from the plan."""
    dates = {change.ti.id: change.run.logical_date for change in plan.changes}
    by_date: dict[dt.datetime | None, list[TaskInstance]] = {}
    for ti in tis:
        by_date.setdefault(dates.get(ti.id), []).append(ti)
    for logical_date, of_run in by_date.items():
        for about in about_tis(of_run, logical_date):
            record_event(session, who, event, about, extra)


def _actor(request: Request, user: Principal, origin: Origin) -> Actor:
    return Actor(user.username, origin, client_of(request))


# One dependency per role and way in: each takes the role check the routes took before.
def _api_runner(request: Request, user: CanRun) -> Actor:
    return _actor(request, user, "api")


def _api_editor(request: Request, user: CanEdit) -> Actor:
    return _actor(request, user, "api")


def _api_admin(request: Request, user: CanAdmin) -> Actor:
    return _actor(request, user, "api")


def _page_runner(request: Request, user: PageCanRun) -> Actor:
    return _actor(request, user, "ui")


def _page_editor(request: Request, user: PageCanEdit) -> Actor:
    return _actor(request, user, "ui")


def _page_admin(request: Request, user: PageCanAdmin) -> Actor:
    return _actor(request, user, "ui")


ActingRunner = Annotated[Actor, Depends(_api_runner)]
ActingEditor = Annotated[Actor, Depends(_api_editor)]
ActingAdmin = Annotated[Actor, Depends(_api_admin)]
PageActingRunner = Annotated[Actor, Depends(_page_runner)]
PageActingEditor = Annotated[Actor, Depends(_page_editor)]
PageActingAdmin = Annotated[Actor, Depends(_page_admin)]


def answer_as(
    session: Session,
    who: Actor,
    ti: TaskInstance,
    chosen_options: list[str],
    params_input: Mapping[str, Any],
) -> Answered:
    """``who``'s answer to ``ti``'s human-in-the-loop question (``state.engine.answer``,
    ``AnswerRefused`` when it cannot be taken), recorded in the event log."""
    name = who.user or ""
    taken = answer(session, ti.id, {"id": name, "name": name}, chosen_options, params_input)
    extra = {"chosen_options": taken.chosen_options, "params_input": taken.params_input}
    record_event(session, who, "update_hitl_detail", about_ti(ti), extra)
    return taken
