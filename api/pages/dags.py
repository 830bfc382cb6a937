"""``/dags``: every DAG with its last runs, next run, paused switch, tags; import errors.

One page of DAGs costs a fixed number of statements: the page and its count, the last runs
of the page's DAGs (one windowed query), their structures (cached per version), the import
errors (paged too).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from api.deps import DbSession, PageUser
from api.pages.common import Pager
from api.structure import dag_view
from api.templating import render
from state.listing import list_dags

router = APIRouter()
PAGE_SIZE = 25


@router.get("/dags", response_class=HTMLResponse)
def dags_page(request: Request, session: DbSession, user: PageUser) -> Response:
    pager = Pager.of(request, PAGE_SIZE)
    dags, total = list_dags(session, pager.page)
    rows = [{"model": model, "structure": dag_view(model)} for model in dags]
    context = {"rows": rows, "pager": pager.counted(total), "principal": user}
    return render(request, "pages/dags.html", context)
