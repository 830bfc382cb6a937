"""The XCom browse (``/xcoms``) and the assets (``/assets``, ``/assets/{asset_id}``).

Each is a page of rows and its count, filtered from the URL. An asset's page shows the DAGs
scheduled on it, the DAGs that have updated it (from its events) and its events, newest first,
a page at a time; every DAG links to its page and every event to the run that made it.
"""

from __future__ import annotations

from dataclasses import replace

from fastapi import APIRouter, Request, status
from fastapi.responses import HTMLResponse, Response

from api.deps import DbSession, PageRefused, PageUser
from api.pages.common import Pager
from api.pages.filters import Filters, Order
from api.pages.runs import run_url, task_url, when
from api.paging import MAX_SQL_INT
from api.templating import render
from state.core import NotFound
from state.records import TIKey
from state.views import (
    AssetFilter,
    EventFilter,
    asset_producers,
    get_asset_view,
    list_assets_page,
    list_events_page,
    list_xcoms,
)

router = APIRouter()
PAGE_SIZE = 50
COUNT_CAP = 1_000  # XComs counted, then "1,000+" (as the browses of api/pages/browse.py)
ANY = "~"
XCOM_SORTS = ("id", "dag_id", "task_id", "run_id", "key")
ASSET_SORTS = ("id", "name", "uri")


@router.get("/xcoms", response_class=HTMLResponse)
def xcoms_browse(request: Request, session: DbSession, _user: PageUser) -> Response:
    filters = Filters(request.query_params)
    key = TIKey(
        filters.text("dag_id") or ANY, filters.text("run_id") or ANY, filters.text("task_id") or ANY
    )
    order = Order.of(request.url.path, filters, XCOM_SORTS, "-id")
    pager = Pager.of(request, PAGE_SIZE)
    page = replace(pager.page_and_one, order_by=order.order_by)
    rows, total = list_xcoms(session, key, page, filters.text("key"), count_limit=COUNT_CAP)
    context = {
        "rows": rows[:PAGE_SIZE],
        "pager": pager.counted(total, COUNT_CAP, len(rows)),
        "order": order,
        "filters": filters,
        "errors": filters.errors,
        "run_url": run_url,
        "task_url": task_url,
        "when": when,
    }
    return render(request, "pages/xcoms.html", context)


@router.get("/assets", response_class=HTMLResponse)
def assets_page(request: Request, session: DbSession, _user: PageUser) -> Response:
    filters = Filters(request.query_params)
    where = AssetFilter(
        name_pattern=filters.text("name_pattern"),
        uri_pattern=filters.text("uri_pattern"),
        dag_ids=filters.many("dag_id"),
    )
    order = Order.of(request.url.path, filters, ASSET_SORTS, "name")
    pager = Pager.of(request, PAGE_SIZE)
    views, total = list_assets_page(session, replace(pager.page, order_by=order.order_by), where)
    context = {
        "views": views,
        "pager": pager.counted(total),
        "order": order,
        "filters": filters,
        "errors": filters.errors,
        "when": when,
    }
    return render(request, "pages/assets.html", context)


@router.get("/assets/{asset_id}", response_class=HTMLResponse)
def asset_page(request: Request, asset_id: int, session: DbSession, _user: PageUser) -> Response:
    if not 0 <= asset_id <= MAX_SQL_INT:
        raise PageRefused(status.HTTP_404_NOT_FOUND, f"no asset with id {asset_id}")
    try:
        view = get_asset_view(session, asset_id)
    except NotFound as error:
        raise PageRefused(status.HTTP_404_NOT_FOUND, str(error)) from None
    pager = Pager.of(request, PAGE_SIZE)
    page = replace(pager.page, order_by=("-id",))  # newest first, from ix_asset_event_asset_id
    events, total = list_events_page(session, page, EventFilter(asset_id=asset_id))
    context = {
        "view": view,
        "producers": asset_producers(session, asset_id),
        "events": events,
        "pager": pager.counted(total),
        "run_url": run_url,
        "when": when,
    }
    return render(request, "pages/asset.html", context)
