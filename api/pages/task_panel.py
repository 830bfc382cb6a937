"""The grid's details panel: a task instance's state, tries, times and log tail, opened in
place when a grid cell is clicked (``static/grid.js``), with links to its full page.

It is the task page's live part (``task_context`` without the body) plus the last lines of
the latest try's log, read from the log's end (``api/logs.py``): a bounded read whatever the
log's size, and for a mapped task its task instances counted by state in one statement.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from api.deps import Context, DbSession, PageUser
from api.logs import read_tail, try_log
from api.pages.runs import MISSING, TASK_PAGE, missing
from api.pages.task_instances import (
    MapIndex,
    levels_of,
    log_lines,
    runs_of_levels,
    task_context,
)
from api.templating import render
from state.core import TaskInstance
from state.records import Role, TIKey
from state.views import task_summaries

router = APIRouter(include_in_schema=False)
#: The panel shows at most this many of the log's last lines, read from its last bytes.
TAIL_LINES = 30
TAIL_BYTES = 16 * 1024


def log_tail(context: Context, ti: TaskInstance) -> list[tuple[str, str]] | None:
    """The latest try's last lines as runs of one level; None if this host has no log."""
    if ti.try_number < 1:
        return None
    key = (ti.dag_id, ti.run_id, ti.task_id, ti.map_index)
    path = try_log(context.settings.logs_folder, key, ti.try_number)
    if not path.is_file():
        return None
    text = "".join(
        f"{line}\n" for line in log_lines(read_tail(path, TAIL_BYTES).text)[-TAIL_LINES:]
    )
    return runs_of_levels(levels_of(text), log_lines(text)) if text else []


@router.get(TASK_PAGE + "/partials/panel", response_class=HTMLResponse)
def task_panel(
    request: Request,
    dag_id: str,
    run_id: str,
    task_id: str,
    user: PageUser,
    session: DbSession,
    context: Context,
    map_index: MapIndex = -1,
) -> Response:
    key = TIKey(dag_id, run_id, task_id, map_index)
    try:
        values: dict[str, Any] = task_context(session, context, key, None, 0, whole=False)
    except MISSING as error:
        return missing(request, error)
    ti = values["ti"]
    if ti is None:  # a mapped task: its task instances by state
        values["summary"] = task_summaries(session, dag_id, run_id, [task_id]).get(task_id)
    else:
        values["tail"] = log_tail(context, ti)
    return render(request, "runs/_panel.html", {**values, "may_run": user.may(Role.USER)})
