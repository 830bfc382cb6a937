"""The run page, ``/dags/{dag_id}/runs/{run_id}``: the run, its tasks in DAG order, its actions.

The tasks come ``TASKS_PAGE`` at a time (``?offset=``), above them the run's task instances
counted by state, each count a link that shows only the tasks with one in that state
(``?state=``, then by task id). A mapped or iterable task is one row with its task instances
counted by state. Every statement is an aggregate or a page: the counts (a row a state), the
page's summaries (``task_summaries`` of its tasks only), a state's page of task ids cut by the
database; so a run of 5,000 tasks costs the statements of a run of three. The task table,
with its counts and pager, is a partial the page polls.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Annotated, Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Depends, Form, Request, status
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api.audit import PageActingRunner, about_run
from api.csrf import FormPost
from api.deps import Context, DbSession, PageUser, Principal, require_on_page
from api.structure import DagStructure, dag_view
from api.templating import render
from state.core import (
    DagModel,
    DagRun,
    DagRunState,
    NotFound,
    TaskInstanceState,
    structure_of,
    utcnow,
)
from state.engine import (
    TRIGGERED_BY_RUN_TYPE,
    BadScope,
    Runs,
    Scope,
    UnknownDag,
    UnknownTask,
    apply_plan,
    plan_clear,
    plan_run_mark,
)
from state.records import MAX_NOTE_CHARS, Role, TIKey, record_event, set_run_note
from state.views import (
    ItemsProgress,
    TaskSummary,
    get_dag,
    get_run,
    items_counts,
    run_ti_counts,
    task_summaries,
    tasks_in_state,
)

router = APIRouter(include_in_schema=False)
RUN_PAGE = "/dags/{dag_id}/runs/{run_id}"
TASK_PAGE = RUN_PAGE + "/tasks/{task_id}"
PageRunner = Annotated[Principal, Depends(require_on_page(Role.USER))]
MISSING = (NotFound, UnknownDag, UnknownTask, BadScope)
#: The tasks one page of the run's task table shows.
TASKS_PAGE = 100
#: The order of the counts, what needs a person's eye first (a state not named: after them).
COUNT_ORDER = (
    "failed", "upstream_failed", "up_for_retry", "awaiting_input", "up_for_reschedule",
    "restarting", "deferred", "running", "queued", "scheduled", "none", "skipped", "success",
    "removed",
)  # fmt: skip
#: What ``?state=`` may name: every state a task instance can have.
TI_STATES = frozenset({*COUNT_ORDER, *(str(state) for state in TaskInstanceState)})


def page_dag(session: DbSession, dag_id: str) -> DagModel:
    """The DAG of a run's or task's page, its structure JSON left unread: ``dag_view`` parses
    it once per version (decoding a 5,000-task DAG's JSON on each poll took 0.6 s)."""
    model = get_dag(session, dag_id)
    if model is None or not model.is_active:
        raise UnknownDag(f"no DAG named {dag_id!r}: see `tradewind dags list`")
    return model


def duration(start: dt.datetime | None, end: dt.datetime | None) -> str:
    """``1h 02m``, ``3m 05s``, ``4.2s``; running ones count up to now; blank if not started."""
    if start is None:
        return ""
    seconds = ((end or utcnow()) - start).total_seconds()
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s"


def when(moment: dt.datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S") if moment else ""


def run_url(dag_id: str, run_id: str) -> str:
    return f"/dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}"


def task_url(dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> str:
    index = f"?map_index={map_index}" if map_index >= 0 else ""
    return f"{run_url(dag_id, run_id)}/tasks/{task_id}{index}"


def missing(request: Request, error: Exception) -> HTMLResponse:
    """A page for a DAG, run or task that does not exist: 404, saying which."""
    values = {"heading": "Not found", "detail": str(error), "status_code": 404}
    return render(request, "error.html", values, status.HTTP_404_NOT_FOUND)


@dataclass(frozen=True)
class TaskRow:
    """One line of the run's task table."""

    task_id: str
    summary: TaskSummary
    kind: str  # "", "mapped" or "iterable"
    duration: str
    items: ItemsProgress | None = None  # an iterable task's items, once counted


def dag_order(structure: DagStructure) -> list[str]:
    """The tasks with each after all its upstream, ties by task id."""
    return structure.upstream_first()


def task_rows(
    structure: DagStructure, summaries: dict[str, TaskSummary], order: list[str] | None = None
) -> list[TaskRow]:
    """The tasks of ``order`` (by default the DAG's order, then any the run has that the DAG no
    longer has), each with its summary."""
    if order is None:
        order = [*dag_order(structure), *sorted(t for t in summaries if t not in structure.tasks)]
    rows = []
    for task_id in order:
        summary = summaries.get(task_id, TaskSummary(task_id))
        spec = structure.tasks.get(task_id)
        mapping = spec.mapping if spec else None
        kind = "" if mapping is None else ("mapped" if mapping.expands else "iterable")
        rows.append(TaskRow(task_id, summary, kind, duration(summary.start, summary.end)))
    return rows


def with_items(session: DbSession, dag_id: str, run_id: str, rows: list[TaskRow]) -> list[TaskRow]:
    """The iterable tasks' rows with their items' progress
    (``state.views.run_view.items_counts``)."""
    keys = {
        row.task_id: TIKey(dag_id, run_id, row.task_id) for row in rows if row.kind == "iterable"
    }
    progress = items_counts(session, list(keys.values()))
    return [
        replace(row, items=progress[keys[row.task_id]]) if row.task_id in keys else row
        for row in rows
    ]


@dataclass(frozen=True)
class TaskPage:
    """Which tasks the table shows: those with a task instance in ``state`` (all: None), from
    ``offset``; ``refused``: a ``?state=`` that is no state, named above the table."""

    state: str | None
    offset: int
    refused: str = ""

    @classmethod
    def of(cls, request: Request) -> TaskPage:
        raw_offset = request.query_params.get("offset", "")
        offset = int(raw_offset) if raw_offset.isdigit() and len(raw_offset) < 10 else 0
        state = request.query_params.get("state") or None
        if state is not None and state not in TI_STATES:
            return cls(None, offset, f"{state[:40]!r} is no task instance state: every task shown")
        return cls(state, offset)

    def query(self, offset: int | None = None) -> str:
        """The query string of this page (or of another ``offset`` of the same filter)."""
        at = self.offset if offset is None else offset
        parts = {"state": self.state} if self.state else {}
        return urlencode(parts | ({"offset": at} if at else {}))


def _count_rank(item: tuple[str, int]) -> tuple[int, str]:
    state = item[0]
    return (COUNT_ORDER.index(state) if state in COUNT_ORDER else len(COUNT_ORDER), state)


def _page_of_tasks(
    session: DbSession, structure: DagStructure, run: DagRun, page: TaskPage
) -> tuple[list[TaskRow], int]:
    """One page of the task table, and how many tasks the whole table has."""
    if page.state is None:
        order = dag_order(structure)
        shown, total = order[page.offset : page.offset + TASKS_PAGE], len(order)
    else:
        shown, total = tasks_in_state(
            session, run.dag_id, run.run_id, page.state, page.offset, TASKS_PAGE
        )
    summaries = task_summaries(session, run.dag_id, run.run_id, shown) if shown else {}
    return task_rows(structure, summaries, shown), total


def _run_context(
    session: DbSession, dag_id: str, run_id: str, page: TaskPage | None = None
) -> dict[str, Any]:
    page = page or TaskPage(None, 0)
    model = page_dag(session, dag_id)
    run: DagRun = get_run(session, dag_id, run_id)
    rows, total = _page_of_tasks(session, dag_view(model), run, page)
    rows = with_items(session, dag_id, run_id, rows)
    counts = run_ti_counts(session, dag_id, run_id)
    return {
        "dag": model,
        "run": run,
        "rows": rows,
        "page": page,
        "tasks_total": total,
        "page_size": TASKS_PAGE,
        "counts": sorted(counts.items(), key=_count_rank),
        "counts_total": sum(counts.values()),
        "run_url": run_url(dag_id, run_id),
        "duration": duration(run.start_date, run.end_date),
        "when": when,
        "live": run.state in (DagRunState.QUEUED, DagRunState.RUNNING),
        "triggered_by": run.triggered_by or TRIGGERED_BY_RUN_TYPE.get(run.run_type),
        "groups": sorted(structure_of(model).groups),
    }


@router.get(RUN_PAGE, response_class=HTMLResponse)
def run_page(
    request: Request, dag_id: str, run_id: str, user: PageUser, session: DbSession
) -> Response:
    try:
        values = _run_context(session, dag_id, run_id, TaskPage.of(request))
    except MISSING as error:
        return missing(request, error)
    return render(request, "runs/run.html", {**values, "may_run": user.may(Role.USER)})


@router.get(RUN_PAGE + "/partials/tasks", response_class=HTMLResponse)
def run_tasks_partial(
    request: Request, dag_id: str, run_id: str, user: PageUser, session: DbSession
) -> Response:
    """The task table alone, for the page to poll while the run goes on."""
    try:
        values = _run_context(session, dag_id, run_id, TaskPage.of(request))
    except MISSING as error:
        return missing(request, error)
    return render(request, "runs/_tasks.html", {**values, "may_run": user.may(Role.USER)})


def _act(
    request: Request, session: DbSession, dag_id: str, run_id: str, act: Callable[[DagRun], None]
) -> Response:
    try:
        act(get_run(session, dag_id, run_id))
    except MISSING as error:
        return missing(request, error)
    return RedirectResponse(run_url(dag_id, run_id), status.HTTP_303_SEE_OTHER)


@router.post(RUN_PAGE + "/note")
def note_run(
    request: Request,
    dag_id: str,
    run_id: str,
    who: PageActingRunner,
    __: FormPost,
    session: DbSession,
    note: Annotated[str, Form(max_length=MAX_NOTE_CHARS)] = "",
) -> Response:
    """Write the run's note (empty: remove it), as the signed-in user."""

    def write(run: DagRun) -> None:
        set_run_note(session, run, note, who.user)
        record_event(session, who, "patch_dag_run", about_run(run), {"note": note})

    return _act(request, session, dag_id, run_id, write)


@router.post(RUN_PAGE + "/clear")
def clear_run(
    request: Request,
    dag_id: str,
    run_id: str,
    who: PageActingRunner,
    __: FormPost,
    session: DbSession,
    context: Context,
) -> Response:
    """Clear every task instance of the run: it runs again from the start (the page's dialog
    posts to ``…/recover`` instead, after listing what changes)."""

    def clear(run: DagRun) -> None:
        plan = plan_clear(session, dag_id, Runs(run.run_id), None, Scope())
        apply_plan(session, plan, who.user, context.purgers)
        record_event(session, who, "clear_dag_run", about_run(run), {"only_failed": False})

    return _act(request, session, dag_id, run_id, clear)


@router.post(RUN_PAGE + "/mark/{state}")
def mark_run(
    request: Request,
    dag_id: str,
    run_id: str,
    state: DagRunState,
    who: PageActingRunner,
    __: FormPost,
    session: DbSession,
) -> Response:
    """Mark the run success or failed (its unfinished task instances with it)."""

    def mark(run: DagRun) -> None:
        apply_plan(session, plan_run_mark(session, [run], state), who.user)
        record_event(session, who, "patch_dag_run", about_run(run), {"state": state})

    return _act(request, session, dag_id, run_id, mark)
