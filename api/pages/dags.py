"""``/dags``: every DAG with its latest runs, next run, paused switch and tags; import errors.

The list is searched (id or display name), filtered (tags, paused or active, the state of the
newest run, owner) and sorted (id, name, last run, next run) from its URL, and paged: a page of
DAGs costs the same statements however many DAGs and runs there are: the page and its count
(the tags, owners and names are columns of their own, ``0021_browse_indexes``), the latest
runs of the page's DAGs (one windowed query), the tags to choose from, and a page of import
errors with its count. The switch is a form (CSRF-checked, role user and up) that posts and
comes back to the page it was on.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, Response

from api.audit import PageActingRunner
from api.csrf import FormPost
from api.deps import DbSession, PageUser
from api.pages.common import Pager, back_to, flash, local_path
from api.pages.filters import Filters
from api.structure import dag_view
from api.templating import render
from state.core import DagRunState, Page
from state.records import About, Role, record_event, set_paused
from state.views import DagFilter, dag_tags, latest_runs, list_dags, list_import_errors

router = APIRouter()
PAGE_SIZE = 25
RUNS_SHOWN = 10
IMPORT_ERRORS_SHOWN = 20
RUN_STATES = tuple(state.value for state in DagRunState)
#: The orders the list offers: (order_by, what the choice says).
SORTS = (
    ("dag_id", "DAG id"),
    ("dag_display_name", "Name"),
    ("-last_run_start_date", "Last run (newest first)"),
    ("last_run_start_date", "Last run (oldest first)"),
    ("next_dagrun", "Next run (soonest first)"),
)


def _dag_filter(filters: Filters) -> DagFilter:
    status = filters.choice("status", ("active", "paused"))
    return DagFilter(
        search=filters.text("search"),
        paused=None if status is None else status == "paused",
        tags=filters.many("tags"),
        tags_match_mode=filters.choice("tags_match_mode", ("any", "all")) or "any",
        owners=filters.many("owners"),
        last_run_state=filters.choice("last_dag_run_state", RUN_STATES),
    )


@router.get("/dags", response_class=HTMLResponse)
def dags_page(request: Request, session: DbSession, user: PageUser) -> Response:
    filters = Filters(request.query_params)
    where = _dag_filter(filters)
    order = filters.choice("order_by", [value for value, _label in SORTS]) or "dag_id"
    pager = Pager.of(request, PAGE_SIZE)
    dags, total = list_dags(session, replace(pager.page, order_by=(order,)), where)
    runs = latest_runs(session, [model.dag_id for model in dags], RUNS_SHOWN)
    rows = [
        {"model": model, "structure": dag_view(model), "runs": runs[model.dag_id]} for model in dags
    ]
    errors, error_total = list_import_errors(session, Page(limit=IMPORT_ERRORS_SHOWN))
    context = {
        "rows": rows,
        "pager": pager.counted(total),
        "may_run": user.may(Role.USER),
        "import_errors": errors,
        "import_error_total": error_total,
        "back": str(request.url.path) + (f"?{request.url.query}" if request.url.query else ""),
        "filters": filters,
        "errors": filters.errors,
        "order": order,
        "sorts": SORTS,
        "tags": dag_tags(session),
        "run_states": RUN_STATES,
    }
    return render(request, "pages/dags.html", context)


@router.post("/dags/{dag_id}/paused")
def set_dag_paused(
    request: Request,
    dag_id: str,
    session: DbSession,
    who: PageActingRunner,
    _csrf: FormPost,
    paused: Annotated[bool, Form()],
    back: Annotated[str, Form()] = "/dags",
) -> Response:
    set_paused(session, dag_id, paused)
    record_event(session, who, "patch_dag", About(dag_id=dag_id), {"is_paused": paused})
    flash(request, f"{dag_id} is {'paused' if paused else 'running on its schedule again'}.")
    return back_to(local_path(back, "/dags"))
