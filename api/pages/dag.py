"""``/dags/{dag_id}``: one DAG's grid, graph, code and details, and its trigger form.

The grid is a partial of its own (``/dags/{dag_id}/grid``) that the page polls, so a run's
cells change colour without a reload. It shows a window of ``GRID_ROWS`` rows (``?rows=2``
is the second), so whatever the DAG's and the runs' size it costs four statements: the DAG,
its latest runs, one aggregate of the window's task instances by (run, row, state), and the
earlier tries of the window's task instances (the try markers; read on the history's key).
The trigger form posts its fields; a conf the params refuse comes back with the errors by
field and creates nothing.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request, status
from fastapi.responses import HTMLResponse, Response
from markdown_it import MarkdownIt

from api.audit import PageActingRunner, about_run
from api.csrf import FormPost
from api.deps import DbSession, PageCanRun, PageRefused, PageUser
from api.pages.common import back_to, flash
from api.pages.events import events_context
from api.pages.graph_layout import layout
from api.pages.grid_model import RowWindow, build_grid, counted_keys, grid_rows, summary_state
from api.pages.trigger_form import RUN_ID_FIELD, fields_of, read_form
from api.structure import dag_view, owners
from api.templating import render
from state.core import DagModel, utcnow
from state.engine import RunExists, create_run
from state.records import Role, record_event
from state.views import earlier_tries, get_dag, grid_cells, recent_runs, runs_by_day
from tradewind.ids import InvalidId

router = APIRouter()
GRID_RUNS = 25
MAX_GRID_RUNS = 100
TABS = ("grid", "graph", "calendar", "code", "details", "events")
CALENDAR_WEEKS = 53
_MARKDOWN = MarkdownIt("commonmark", {"html": False})  # a DAG's doc is text, never raw HTML


def dag_or_404(session: DbSession, dag_id: str) -> DagModel:
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
    run_ids = [run.run_id for run in runs]
    cells = grid_cells(session, model.dag_id, run_ids, keyed)
    tasks = [row.row_id for row in shown if not row.is_group and not row.mapped]
    tries = earlier_tries(session, model.dag_id, run_ids, tasks)
    grid = build_grid(model.dag_id, window, shown, runs, cells, tries)
    return {
        "grid": grid,
        "runs_wanted": runs_wanted,
        "grid_query": _grid_query(window, runs_wanted),
    }


def _grid_query(window: RowWindow, runs_wanted: int) -> str:
    """The query string that names this grid (the page's links and its poll keep it)."""
    query = {"runs": runs_wanted} | ({"rows": window.page} if window.page > 1 else {})
    return urlencode(query)


def _graph_context(session: DbSession, model: DagModel, request: Request) -> dict[str, Any]:
    """The graph, coloured by the states of one run (``?run_id=``, else the latest), with the
    groups ``?open=`` names open (``*``: all; none given: the layout's default by size)."""
    runs = recent_runs(session, model.dag_id, GRID_RUNS)
    wanted = request.query_params.get("run_id")
    chosen = next((run for run in runs if run.run_id == wanted), runs[0] if runs else None)
    counts = grid_cells(session, model.dag_id, [chosen.run_id] if chosen else [])
    states = {task_id: summary_state(cell.counts) for (_run, task_id), cell in counts.items()}
    structure = dag_view(model)
    given = request.query_params.get("open")
    open_groups = None
    if given is not None:
        open_groups = structure.groups.keys() if given == "*" else given.split(",")
    graph = layout(structure, states, open_groups)
    keep = {"tab": "graph"} | ({"run_id": chosen.run_id} if chosen and wanted else {})

    def toggled(group: str) -> str:
        now = set(graph.open_groups)
        now = now - {group} if group in now else now | {group}
        return "?" + urlencode(keep | {"open": ",".join(sorted(now))})

    return {
        "graph": graph,
        "latest": chosen,
        "graph_runs": runs,
        "toggle_group": toggled,
        "all_open": "?" + urlencode(keep | {"open": "*"}),
        "all_closed": "?" + urlencode(keep | {"open": ""}),
        "graph_open": ",".join(sorted(graph.open_groups)),
    }


@dataclass(frozen=True)
class Day:
    """One cell of the calendar: a UTC day and its runs by state."""

    day: dt.date
    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def state(self) -> str:
        """What the cell shows: failed if any run failed, then running, queued, success."""
        for state in ("failed", "running", "queued", "success"):
            if self.counts.get(state):
                return state
        return "none"

    @property
    def title(self) -> str:
        runs = ", ".join(f"{count} {state}" for state, count in sorted(self.counts.items()))
        return f"{self.day:%a %Y-%m-%d}: {runs or 'no run'}"


def _calendar_context(session: DbSession, model: DagModel) -> dict[str, Any]:
    """The last ``CALENDAR_WEEKS`` weeks, Monday first, each day with its runs by state."""
    today = utcnow().date()
    first = today - dt.timedelta(days=today.weekday() + 7 * (CALENDAR_WEEKS - 1))
    since = dt.datetime.combine(first, dt.time(), dt.UTC)
    counts = runs_by_day(session, model.dag_id, since)
    weeks = [
        [Day(day, counts.get(day.isoformat(), {})) for day in _week(first + dt.timedelta(weeks=n))]
        for n in range(CALENDAR_WEEKS)
    ]
    months = [
        (n, week[0].day.strftime("%b"))
        for n, week in enumerate(weeks)
        if n == 0 or week[0].day.month != weeks[n - 1][0].day.month
    ]
    busiest = max((day.total for week in weeks for day in week), default=0)
    return {
        "weeks": weeks,
        "months": dict(months),
        "today": today,
        "busiest": busiest,
        "run_days": sum(1 for week in weeks for day in week if day.total),
    }


def _week(monday: dt.date) -> list[dt.date]:
    return [monday + dt.timedelta(days=n) for n in range(7)]


def _source(model: DagModel) -> str | None:
    try:
        return Path(model.fileloc).read_text(encoding="utf-8", errors="replace")
    except OSError:  # parsed on another host, or deleted since
        return None


def page_context(request: Request, model: DagModel, user: PageUser, tab: str) -> dict[str, Any]:
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
    model = dag_or_404(session, dag_id)
    tab = request.query_params.get("tab", "grid")
    tab = tab if tab in TABS else "grid"
    context = page_context(request, model, user, tab)
    if tab == "grid":
        context |= _grid_context(session, model, request)
    elif tab == "graph":
        context |= _graph_context(session, model, request)
    elif tab == "calendar":
        context |= _calendar_context(session, model)
    elif tab == "code":
        context["source"] = _source(model)
    elif tab == "events":
        context |= events_context(session, request, dag_id)
    return render(request, "pages/dag.html", context)


@router.get("/dags/{dag_id}/grid", response_class=HTMLResponse)
def dag_grid(request: Request, dag_id: str, session: DbSession, user: PageUser) -> Response:
    """The grid alone: what the page polls to follow its runs."""
    model = dag_or_404(session, dag_id)
    context = _grid_context(session, model, request)
    return render(request, "partials/dag/grid.html", {**context, "may_run": user.may(Role.USER)})


@router.get("/dags/{dag_id}/trigger", response_class=HTMLResponse)
def trigger_page(request: Request, dag_id: str, session: DbSession, user: PageCanRun) -> Response:
    model = dag_or_404(session, dag_id)
    context = page_context(request, model, user, "trigger")
    context |= {"fields": fields_of(dag_view(model)), "run_id": "", "form_error": None}
    return render(request, "pages/trigger.html", context)


@router.post("/dags/{dag_id}/trigger", response_class=HTMLResponse)
async def trigger(
    request: Request,
    dag_id: str,
    session: DbSession,
    user: PageCanRun,
    who: PageActingRunner,
    _csrf: FormPost,
) -> Response:
    model = dag_or_404(session, dag_id)
    form = {key: value for key, value in (await request.form()).items() if isinstance(value, str)}
    submitted = read_form(dag_view(model), form)
    form_error = submitted.form_error
    if submitted.ok:
        try:
            run = create_run(
                session,
                dag_id,
                submitted.run_id,
                submitted.conf,
                "manual",
                triggered_by=who.triggered_by,
                user=who.user,
            )
        except (RunExists, InvalidId) as error:
            form_error = str(error)
        else:
            session.flush()
            extra = {"conf": submitted.conf}
            record_event(session, who, "trigger_dag_run", about_run(run), extra)
            flash(request, f"Triggered {dag_id}: run {run.run_id} is queued.")
            return back_to(f"/dags/{dag_id}")
    context = page_context(request, model, user, "trigger")
    context |= {
        "fields": fields_of(dag_view(model), submitted.posted, submitted.errors),
        "run_id": form.get(RUN_ID_FIELD, ""),
        "form_error": form_error,
    }
    return render(request, "pages/trigger.html", context, status.HTTP_400_BAD_REQUEST)
