"""``/dags/{dag_id}``: one DAG's grid, graph, code and details, and its trigger form.

The grid is a partial of its own (``/dags/{dag_id}/grid``) that the page polls, so a run's
cells change colour without a reload. It shows a window of ``GRID_ROWS`` rows (``?rows=2``
is the second), so whatever the DAG's and the runs' size it costs three statements: the DAG,
its latest runs, and one aggregate of the window's task instances by (run, row, state).
The trigger form posts its fields; a conf the params refuse comes back with the errors by
field and creates nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request, status
from fastapi.responses import HTMLResponse, Response
from markdown_it import MarkdownIt

from api.csrf import FormPost
from api.deps import DbSession, PageCanRun, PageRefused, PageUser
from api.pages.common import back_to, flash
from api.pages.graph_layout import layout
from api.pages.grid_model import RowWindow, build_grid, counted_keys, grid_rows, summary_state
from api.pages.trigger_form import RUN_ID_FIELD, fields_of, read_form
from api.structure import dag_view, owners
from api.templating import render
from state.core import DagModel
from state.engine import RunExists, create_run
from state.records import Role
from state.views import get_dag, grid_cells, recent_runs
from tradewind.ids import InvalidId

router = APIRouter()
GRID_RUNS = 25
MAX_GRID_RUNS = 100
TABS = ("grid", "graph", "code", "details")
_MARKDOWN = MarkdownIt("commonmark", {"html": False})  # a DAG's doc is text, never raw HTML


def _dag_or_404(session: DbSession, dag_id: str) -> DagModel:
    model = get_dag(session, dag_id)
    if model is None:
        raise PageRefused(status.HTTP_404_NOT_FOUND, f"no DAG named {dag_id!r}")
    return model


def _runs_wanted(request: Request) -> int:
    raw = request.query_params.get("runs", "")
    return min(int(raw), MAX_GRID_RUNS) if raw.isdigit() and int(raw) > 0 else GRID_RUNS


def _rows_page(request: Request) -> int:
    raw = request.query_params.get("rows", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else 1


def _grid_context(session: DbSession, model: DagModel, request: Request) -> dict[str, Any]:
    """The window of rows the URL names (``?rows=N``, pages of ``GRID_ROWS``) by the runs."""
    runs_wanted = _runs_wanted(request)
    rows = grid_rows(dag_view(model))
    window = RowWindow.at(_rows_page(request), len(rows))
    shown = window.of(rows)
    runs = recent_runs(session, model.dag_id, runs_wanted)
    keyed = counted_keys(shown)
    cells = grid_cells(session, model.dag_id, [run.run_id for run in runs], keyed)
    grid = build_grid(model.dag_id, window, shown, runs, cells)
    return {
        "grid": grid,
        "runs_wanted": runs_wanted,
        "grid_query": _grid_query(window, runs_wanted),
    }


def _grid_query(window: RowWindow, runs_wanted: int) -> str:
    """The query string that names this grid (the page's links and its poll keep it)."""
    query = {"runs": runs_wanted} | ({"rows": window.page} if window.page > 1 else {})
    return urlencode(query)


def _graph_context(session: DbSession, model: DagModel) -> dict[str, Any]:
    """The graph, coloured by the states of the DAG's latest run."""
    latest = recent_runs(session, model.dag_id, 1)
    counts = grid_cells(session, model.dag_id, [run.run_id for run in latest])
    states = {task_id: summary_state(cell.counts) for (_run, task_id), cell in counts.items()}
    return {"graph": layout(dag_view(model), states), "latest": latest[0] if latest else None}


def _source(model: DagModel) -> str | None:
    try:
        return Path(model.fileloc).read_text(encoding="utf-8", errors="replace")
    except OSError:  # parsed on another host, or deleted since
        return None


def _page_context(request: Request, model: DagModel, user: PageUser, tab: str) -> dict[str, Any]:
    structure = dag_view(model)
    return {
        "model": model,
        "structure": structure,
        "tab": tab,
        "may_run": user.may(Role.USER),
        "owners": owners(structure),
        "back": str(request.url.path),
        "doc_html": _MARKDOWN.render(structure.doc_md) if structure.doc_md else "",
    }


@router.get("/dags/{dag_id}", response_class=HTMLResponse)
def dag_page(request: Request, dag_id: str, session: DbSession, user: PageUser) -> Response:
    model = _dag_or_404(session, dag_id)
    tab = request.query_params.get("tab", "grid")
    tab = tab if tab in TABS else "grid"
    context = _page_context(request, model, user, tab)
    if tab == "grid":
        context |= _grid_context(session, model, request)
    elif tab == "graph":
        context |= _graph_context(session, model)
    elif tab == "code":
        context["source"] = _source(model)
    return render(request, "pages/dag.html", context)


@router.get("/dags/{dag_id}/grid", response_class=HTMLResponse)
def dag_grid(request: Request, dag_id: str, session: DbSession, user: PageUser) -> Response:
    """The grid alone: what the page polls to follow its runs."""
    model = _dag_or_404(session, dag_id)
    context = _grid_context(session, model, request)
    return render(request, "partials/dag/grid.html", {**context, "may_run": user.may(Role.USER)})


@router.get("/dags/{dag_id}/trigger", response_class=HTMLResponse)
def trigger_page(request: Request, dag_id: str, session: DbSession, user: PageCanRun) -> Response:
    model = _dag_or_404(session, dag_id)
    context = _page_context(request, model, user, "trigger")
    context |= {"fields": fields_of(dag_view(model)), "run_id": "", "form_error": None}
    return render(request, "pages/trigger.html", context)


@router.post("/dags/{dag_id}/trigger", response_class=HTMLResponse)
async def trigger(
    request: Request, dag_id: str, session: DbSession, user: PageCanRun, _csrf: FormPost
) -> Response:
    model = _dag_or_404(session, dag_id)
    form = {key: value for key, value in (await request.form()).items() if isinstance(value, str)}
    submitted = read_form(dag_view(model), form)
    form_error = submitted.form_error
    if submitted.ok:
        try:
            run = create_run(session, dag_id, submitted.run_id, submitted.conf, "manual")
        except (RunExists, InvalidId) as error:
            form_error = str(error)
        else:
            session.flush()
            flash(request, f"Triggered {dag_id}: run {run.run_id} is queued.")
            return back_to(f"/dags/{dag_id}")
    context = _page_context(request, model, user, "trigger")
    context |= {
        "fields": fields_of(dag_view(model), submitted.posted, submitted.errors),
        "run_id": form.get(RUN_ID_FIELD, ""),
        "form_error": form_error,
    }
    return render(request, "pages/trigger.html", context, status.HTTP_400_BAD_REQUEST)
