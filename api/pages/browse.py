"""The browses: runs across DAGs (``/dag_runs``), one DAG's Runs tab (``/dags/{dag_id}/runs``)
and task instances across DAGs (``/task_instances``), filtered and sorted from the URL.

Each page is two statements whatever the store holds: the page of rows (and one more, to know
whether there is a next page) and its count, which stops at ``COUNT_CAP`` (a store of a
million task instances says "1,000+" rather than count them on every page); every order a
heading offers reads an index (``0021_browse_indexes``). A task instance's row carries a checkbox
whose value names it (``dag_id|run_id|task_id|map_index``) for ``partials/bulk_actions.html``,
the bulk actions' form, when it is installed.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from api.deps import DbSession, PageUser
from api.models.dag_runs import dag_run_response
from api.pages.common import Pager
from api.pages.dag import dag_or_404, page_context
from api.pages.filters import Filters, Order
from api.pages.runs import duration, run_url, task_url, when
from api.templating import render
from state.core import DagRunState, TaskInstanceState
from state.views import RunFilter, TIFilter, list_runs, list_task_instances

router = APIRouter()
ANY = "~"  # every DAG, as the API's paths say it
PAGE_SIZE = 50
#: Lists count this many rows at most, then say "1,000+" (a count of a million rows is a
#: scan of a million rows on every page).
COUNT_CAP = 1_000
RUN_TYPES = ("manual", "scheduled", "backfill", "asset_triggered", "test")
RUN_STATES = tuple(state.value for state in DagRunState)
TI_STATES = tuple(state.value for state in TaskInstanceState)
# The orders a heading offers: each reads an index (0021_browse_indexes), so a page of a
# million rows is never sorted whole; the API sorts by more.
RUN_SORTS = ("id", "dag_id", "logical_date", "start_date")
TI_SORTS = ("id", "dag_id", "start_date")


def _shown(context: dict[str, Any]) -> dict[str, Any]:
    """What every browse's template uses to write a row."""
    return context | {
        "duration": duration,
        "when": when,
        "run_url": run_url,
        "task_url": task_url,
        "triggered_by": lambda run: dag_run_response(run).triggered_by or "",
        "run_states": RUN_STATES,
        "sorts": (*RUN_SORTS, *TI_SORTS),
        "run_types": RUN_TYPES,
        "ti_states": TI_STATES,
    }


def _run_filter(filters: Filters, across_dags: bool) -> RunFilter:
    return RunFilter(
        states=filters.many("state", RUN_STATES),
        run_types=filters.many("run_type", RUN_TYPES),
        run_id_pattern=filters.text("run_id_pattern"),
        dag_id_pattern=filters.text("dag_id_pattern") if across_dags else None,
        logical_date_gte=filters.moment("logical_date_gte"),
        logical_date_lte=filters.moment("logical_date_lte"),
        start_date=filters.span("start_date"),
    )


def _runs_context(request: Request, session: DbSession, dag_id: str) -> dict[str, Any]:
    filters = Filters(request.query_params)
    where = _run_filter(filters, across_dags=dag_id == ANY)
    order = Order.of(request.url.path, filters, RUN_SORTS, "-id")
    pager = Pager.of(request, PAGE_SIZE)
    page = replace(pager.page_and_one, order_by=order.order_by)
    runs, total = list_runs(session, dag_id, page, where, COUNT_CAP)
    return _shown(
        {
            "runs": runs[:PAGE_SIZE],
            "pager": pager.counted(total, COUNT_CAP, len(runs)),
            "order": order,
            "filters": filters,
            "errors": filters.errors,
            "across_dags": dag_id == ANY,
        }
    )


@router.get("/dag_runs", response_class=HTMLResponse)
def runs_browse(request: Request, session: DbSession, _user: PageUser) -> Response:
    context = _runs_context(request, session, ANY)
    return render(request, "pages/dag_runs.html", context)


@router.get("/dags/{dag_id}/runs", response_class=HTMLResponse)
def dag_runs_tab(request: Request, dag_id: str, session: DbSession, user: PageUser) -> Response:
    model = dag_or_404(session, dag_id)
    context = page_context(request, model, user, "runs") | _runs_context(request, session, dag_id)
    return render(request, "pages/dag_runs.html", context)


def _ti_filter(filters: Filters) -> tuple[str, str, TIFilter]:
    dag_id, run_id = filters.text("dag_id") or ANY, filters.text("run_id") or ANY
    where = TIFilter(
        task_id_pattern=filters.text("task_id_pattern"),
        states=filters.many("state", TI_STATES),
        pools=filters.many("pool"),
        queues=filters.many("queue"),
        start_date=filters.span("start_date"),
        end_date=filters.span("end_date"),
        duration=filters.seconds("duration"),
    )
    return dag_id, run_id, where


@router.get("/task_instances", response_class=HTMLResponse)
def task_instances_browse(request: Request, session: DbSession, _user: PageUser) -> Response:
    filters = Filters(request.query_params)
    dag_id, run_id, where = _ti_filter(filters)
    order = Order.of(request.url.path, filters, TI_SORTS, "-id")
    pager = Pager.of(request, PAGE_SIZE)
    page = replace(pager.page_and_one, order_by=order.order_by)
    rows, total = list_task_instances(session, dag_id, run_id, page, where, COUNT_CAP)
    context = {
        "rows": rows[:PAGE_SIZE],
        "pager": pager.counted(total, COUNT_CAP, len(rows)),
        "order": order,
        "filters": filters,
        "errors": filters.errors,
        "now": dt.datetime.now(dt.UTC),
    }
    return render(request, "pages/task_instances.html", _shown(context))
