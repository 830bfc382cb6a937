"""``/events``: the event log, browsed with its filters in the URL; a DAG's Events tab is the
same listing with the DAG fixed (``events_context``).

The filters are Airflow's (``GET /eventLogs``): DAG, run, task, event, owner (who), and a time
window (``after``, ``before``); a page holds ``PAGE_SIZE`` rows, newest first.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from api.deps import DbSession, PageUser
from api.templating import render
from state.core import EventLog, Page
from state.views import EventLogFilter, list_event_logs

router = APIRouter()
PAGE_SIZE = 50
#: The filters a URL may carry, in the order the form shows them.
FILTERS = ("dag_id", "run_id", "task_id", "event", "owner", "after", "before")


def _moment(text: str) -> dt.datetime | None:
    """A time of the form's (``2026-12-04T18:00`` or with seconds and zone), in UTC; None if
    empty or unreadable (the field is then shown as typed, and ignored)."""
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment


def _filters(request: Request, dag_id: str | None) -> dict[str, str]:
    found = {name: request.query_params.get(name, "").strip() for name in FILTERS}
    if dag_id is not None:
        found["dag_id"] = dag_id
    return found


def _where(filters: dict[str, str]) -> EventLogFilter:
    return EventLogFilter(
        dag_id=filters["dag_id"] or None,
        run_id=filters["run_id"] or None,
        task_id=filters["task_id"] or None,
        event=filters["event"] or None,
        owner=filters["owner"] or None,
        after=_moment(filters["after"]) if filters["after"] else None,
        before=_moment(filters["before"]) if filters["before"] else None,
    )


def extra_text(row: EventLog) -> str:
    """``extra`` as a person reads it: ``key=value`` pairs."""
    if not row.extra:
        return ""
    recorded = json.loads(row.extra)
    return ", ".join(f"{key}={json.dumps(value)}" for key, value in recorded.items())


def events_context(session: Session, request: Request, dag_id: str | None = None) -> dict[str, Any]:
    """The listing's rows, filters and paging links (``dag_id``: fixed, for a DAG's tab)."""
    filters = _filters(request, dag_id)
    raw = request.query_params.get("page", "1")
    number = int(raw) if raw.isdigit() and 0 < int(raw) < 2**20 else 1
    page = Page(limit=PAGE_SIZE, offset=(number - 1) * PAGE_SIZE)
    rows, total = list_event_logs(session, page, _where(filters))
    kept = {k: v for k, v in filters.items() if v and not (dag_id and k == "dag_id")}
    if dag_id is not None:
        kept = {"tab": "events", **kept}

    def href(n: int) -> str:
        return f"{request.url.path}?{urlencode({**kept, 'page': n})}"

    return {
        "events": rows,
        "filters": filters,
        "dag_fixed": dag_id is not None,
        "events_total": total,
        "events_first": min(total, page.offset + 1),
        "events_last": min(total, page.offset + len(rows)),
        "events_previous": href(number - 1) if number > 1 else None,
        "events_next": href(number + 1) if page.offset + len(rows) < total else None,
        "extra_text": extra_text,
    }


@router.get("/events", response_class=HTMLResponse)
def events_page(request: Request, session: DbSession, _user: PageUser) -> Response:
    return render(request, "pages/events.html", events_context(session, request))
