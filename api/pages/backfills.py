"""``/backfills``: every backfill with its state, and a form that previews then creates one.

The form's "Preview" is the API's dry run (``state.engine.plan_backfill``): the page lists the
runs the backfill would create and those that exist already, creating nothing; "Create" makes
it as ``tradewind dags backfill`` does. Pause, resume and cancel are one form each (CSRF, role
user and up); a backfill that has ended refuses them with one line.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request, status
from fastapi.responses import HTMLResponse, Response

from api.csrf import FormPost
from api.deps import DbSession, PageCanRun, PageUser, Principal
from api.pages.common import Pager, back_to, flash
from api.pages.filters import Filters
from api.pages.runs import run_url, when
from api.paging import MAX_SQL_INT
from api.templating import render
from state.core import NotFound
from state.engine import (
    BackfillEnded,
    BackfillPlan,
    BackfillRequest,
    InvalidBackfill,
    UnknownDag,
    backfill_run_id,
    cancel_backfill,
    create_backfill,
    list_backfills,
    plan_backfill,
    set_paused,
)
from state.records import Role

router = APIRouter()
PAGE_SIZE = 25
Text = Annotated[str, Form()]
ACTIONS = {"pause": "paused", "unpause": "resumed", "cancel": "cancelled"}


@dataclass(frozen=True)
class Asked:
    """What the create form posted, kept to fill the form again."""

    dag_id: str = ""
    from_date: str = ""
    to_date: str = ""
    max_active_runs: str = ""


def _listing(request: Request, session: DbSession, user: Principal, **extra: Any) -> dict[str, Any]:
    filters = Filters(request.query_params)
    pager = Pager.of(request, PAGE_SIZE)
    page = replace(pager.page, order_by=("-id",))
    views, total = list_backfills(session, page, filters.text("dag_id"))
    return {
        "views": views,
        "pager": pager.counted(total),
        "filters": filters,
        "may_run": user.may(Role.USER),
        "asked": Asked(dag_id=filters.text("dag_id") or ""),
        "plan": None,
        "error": None,
        "when": when,
        "run_url": run_url,
    } | extra


@router.get("/backfills", response_class=HTMLResponse)
def backfills_page(request: Request, session: DbSession, user: PageUser) -> Response:
    return render(request, "pages/backfills.html", _listing(request, session, user))


def _moment(name: str, raw: str) -> dt.datetime:
    try:
        value = dt.datetime.fromisoformat(raw.strip())
    except ValueError:
        raise InvalidBackfill(f"{name}: {raw!r} is not a date (write 2026-12-01)") from None
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def _request(asked: Asked) -> BackfillRequest:
    if not asked.dag_id.strip():
        raise InvalidBackfill("DAG: name the DAG to backfill")
    runs = asked.max_active_runs.strip()
    if runs and not (runs.isdigit() and 0 < int(runs) <= MAX_SQL_INT):
        raise InvalidBackfill(f"max active runs: {runs!r} is not a whole number above 0")
    return BackfillRequest(
        dag_id=asked.dag_id.strip(),
        from_date=_moment("from", asked.from_date),
        to_date=_moment("to", asked.to_date),
        max_active_runs=int(runs) if runs else None,
    )


@router.post("/backfills", response_class=HTMLResponse)
def post_backfill(
    request: Request,
    session: DbSession,
    user: PageCanRun,
    _csrf: FormPost,
    dag_id: Text,
    from_date: Text,
    to_date: Text,
    max_active_runs: Text = "",
    action: Text = "preview",
) -> Response:
    asked = Asked(dag_id, from_date, to_date, max_active_runs)
    try:
        wanted = _request(asked)
        plan: BackfillPlan = plan_backfill(session, wanted)
        if action == "create":
            done = create_backfill(session, wanted)
            flash(
                request,
                f"Backfill {done.backfill_id} of {wanted.dag_id}: {len(done.created)} runs queued.",
            )
            return back_to("/backfills")
    except (InvalidBackfill, UnknownDag, NotFound) as error:
        context = _listing(request, session, user, asked=asked, error=str(error))
        return render(request, "pages/backfills.html", context, status.HTTP_400_BAD_REQUEST)
    preview = [(backfill_run_id(interval), *interval) for interval in plan.intervals]
    context = _listing(request, session, user, asked=asked, plan=plan, preview=preview)
    return render(request, "pages/backfills.html", context)


@router.post("/backfills/{backfill_id}/{action}")
def change_backfill(
    request: Request,
    backfill_id: int,
    action: str,
    session: DbSession,
    _user: PageCanRun,
    _csrf: FormPost,
) -> Response:
    if action not in ACTIONS or not 0 <= backfill_id <= MAX_SQL_INT:
        flash(
            request,
            f"{action!r} is not something a backfill does: pause, unpause or cancel",
            "error",
        )
        return back_to("/backfills")
    try:
        if action == "cancel":
            cancel_backfill(session, backfill_id)
        else:
            set_paused(session, backfill_id, action == "pause")
    except (BackfillEnded, NotFound) as error:
        flash(request, str(error), "error")
        return back_to("/backfills")
    flash(request, f"Backfill {backfill_id} {ACTIONS[action]}.")
    return back_to("/backfills")
