"""``/dags``: every DAG with its latest runs, next run, paused switch and tags; import errors.

A page of DAGs costs the same statements however many runs they have: the page and its
count, the latest runs of the page's DAGs (one windowed query), and a page of import errors
with its count. The switch is a form (CSRF-checked, role user and up) that posts and comes
back to the page it was on.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, Response

from api.audit import PageActingRunner
from api.csrf import FormPost
from api.deps import DbSession, PageUser
from api.pages.common import Pager, back_to, flash, local_path
from api.structure import dag_view
from api.templating import render
from state.core import Page
from state.records import About, Role, record_event, set_paused
from state.views import latest_runs, list_dags, list_import_errors

router = APIRouter()
PAGE_SIZE = 25
RUNS_SHOWN = 10
IMPORT_ERRORS_SHOWN = 20


@router.get("/dags", response_class=HTMLResponse)
def dags_page(request: Request, session: DbSession, user: PageUser) -> Response:
    pager = Pager.of(request, PAGE_SIZE)
    dags, total = list_dags(session, pager.page)
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
