"""A run's Gantt chart, ``/dags/{dag_id}/runs/{run_id}/gantt``: each task as a bar from its first
task instance's start to its last one's end, in the DAG's order, coloured by its state.

The bars come from the run page's one ``GROUP BY`` (``state.views.task_summaries``): a mapped
or iterable task is one bar spanning its task instances. The chart shows ``GANTT_ROWS`` tasks at
a time (``?offset=``), drawn on the server as SVG, so a 5,000-task run costs what a small one
does: the same statements and a bounded page. The time axis spans the whole run, so the bars
of every page share one scale.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from api.deps import DbSession, PageUser
from api.pages.runs import (
    MISSING,
    RUN_PAGE,
    dag_order,
    duration,
    missing,
    page_dag,
    run_url,
    when,
)
from api.structure import dag_view
from api.templating import render
from state.core import DagRunState, utcnow
from state.views import TaskSummary, get_run, task_summaries

router = APIRouter(include_in_schema=False)
GANTT_ROWS = 500
CHART_WIDTH = 900  # the bars' area, in the SVG's units
ROW_HEIGHT = 22
LABEL_WIDTH = 260
AXIS_HEIGHT = 26
TICKS = 6


@dataclass(frozen=True)
class Bar:
    task_id: str
    state: str
    x: float
    width: float
    y: float
    title: str
    href: str
    mapped: bool


@dataclass(frozen=True)
class Tick:
    x: float
    label: str


def _scale(start: dt.datetime, end: dt.datetime) -> tuple[float, list[Tick]]:
    """Pixels per second over [start, end], and the axis's ticks (offsets from the start)."""
    seconds = max((end - start).total_seconds(), 1e-3)
    per_second = CHART_WIDTH / seconds
    ticks = [
        Tick(LABEL_WIDTH + CHART_WIDTH * n / TICKS, _offset(seconds * n / TICKS))
        for n in range(TICKS + 1)
    ]
    return per_second, ticks


def _offset(seconds: float) -> str:
    if seconds < 60:
        return f"+{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"+{hours}h{minutes:02d}m" if hours else f"+{minutes}m{secs:02d}s"


def _bars(
    summaries: dict[str, TaskSummary],
    order: list[str],
    origin: dt.datetime,
    per_second: float,
    base: str,
    now: dt.datetime,
) -> list[Bar]:
    bars = []
    for row, task_id in enumerate(order):
        summary = summaries.get(task_id, TaskSummary(task_id))
        y = AXIS_HEIGHT + row * ROW_HEIGHT
        if summary.start is None:  # not started: a row without a bar
            bars.append(Bar(task_id, summary.state, LABEL_WIDTH, 0, y, "not started", "", False))
            continue
        end = summary.end or now
        x = LABEL_WIDTH + (summary.start - origin).total_seconds() * per_second
        width = max((end - summary.start).total_seconds() * per_second, 2)
        count = f"{summary.total} task instances, " if summary.mapped else ""
        title = (
            f"{task_id}: {summary.state}, {count}{when(summary.start)} → "
            f"{when(summary.end) or 'now'} ({duration(summary.start, summary.end)})"
        )
        href = f"{base}/tasks/{task_id}"
        bars.append(Bar(task_id, summary.state, x, width, y, title, href, summary.mapped))
    return bars


@router.get(RUN_PAGE + "/gantt", response_class=HTMLResponse)
def gantt_page(
    request: Request, dag_id: str, run_id: str, _: PageUser, session: DbSession
) -> Response:
    try:
        model = page_dag(session, dag_id)
        run = get_run(session, dag_id, run_id)
    except MISSING as error:
        return missing(request, error)
    summaries = task_summaries(session, dag_id, run_id)
    structure = dag_view(model)
    order = [*dag_order(structure), *sorted(t for t in summaries if t not in structure.tasks)]
    offset = max(int(request.query_params.get("offset", "0") or 0), 0)
    shown = order[offset : offset + GANTT_ROWS]
    now = utcnow()
    starts = [s.start for s in summaries.values() if s.start is not None]
    origin = run.start_date or min(starts, default=now)
    origin = min([origin, *starts])
    ends = [s.end or now for s in summaries.values() if s.start is not None]
    finish = run.end_date or max([*ends, now])
    finish = max([finish, *ends])
    per_second, ticks = _scale(origin, finish)
    base = run_url(dag_id, run_id)
    bars = _bars(summaries, shown, origin, per_second, base, now)
    values: dict[str, Any] = {
        "dag": model,
        "run": run,
        "run_url": base,
        "bars": bars,
        "ticks": ticks,
        "width": LABEL_WIDTH + CHART_WIDTH + 20,
        "height": AXIS_HEIGHT + len(bars) * ROW_HEIGHT + 8,
        "label_width": LABEL_WIDTH,
        "row_height": ROW_HEIGHT,
        "offset": offset,
        "size": GANTT_ROWS,
        "total": len(order),
        "pager_base": f"{base}/gantt",
        "span": duration(origin, finish),
        "live": run.state in (DagRunState.QUEUED, DagRunState.RUNNING),
    }
    return render(request, "runs/gantt.html", values)
