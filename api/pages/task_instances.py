"""The task page, ``/dags/{dag_id}/runs/{run_id}/tasks/{task_id}[?map_index=]``.

Its tries, the selected try's log (its tail first, earlier lines a page at a time, followed live:
the page polls ``…/log`` for the bytes after an offset; ``api/logs.py``), its XComs and
state-store keys, why it is not running yet, and for a mapped or iterable task its items:
counts, a paged list, the failed ones with their errors. Every part is an aggregate or a page, so
the page costs the same statements for 3 items as for 16,194.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request, status
from fastapi.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)

from api.audit import PageActingRunner, about_ti, about_tis
from api.csrf import FormPost
from api.deps import Context, DbSession, PageUser, Principal
from api.log_lines import parse
from api.logs import LogWindow, read_after, read_before, read_tail, try_log
from api.pages.hitl import question_context
from api.pages.runs import (
    MISSING,
    TASK_PAGE,
    duration,
    missing,
    page_dag,
    run_url,
    task_url,
    when,
)
from api.pages.waiting import waiting_reasons
from api.structure import dag_view
from api.templating import render
from state.core import (
    MAX_PAGE_LIMIT,
    DagRun,
    DagRunState,
    NotFound,
    Page,
    TaskInstance,
    TaskInstanceState,
)
from state.engine import (
    Runs,
    Scope,
    Target,
    apply_plan,
    plan_clear,
    plan_mark,
)
from state.records import (
    MAX_NOTE_CHARS,
    Role,
    TIKey,
    record_event,
    set_ti_note,
    tries_of,
)
from state.views import (
    ItemsProgress,
    TIFilter,
    get_run,
    get_task_instance,
    items_progress,
    items_view,
    list_task_instances,
    list_xcoms,
    task_state_values,
    task_summaries,
)

router = APIRouter(include_in_schema=False)
PAGE_SIZE = 25
#: The most bytes of log one answer carries: the page opens on this much of the tail, pages back
#: this much at a time, and a follower further behind than this jumps to the tail.
LOG_CHUNK_BYTES = 256 * 1024
#: The most bytes of a followed log the page keeps: older lines are let go (and can be paged back).
LOG_WINDOW_BYTES = 4 * 1024 * 1024
MapIndex = Annotated[int, Query(ge=-1)]
Offset = Annotated[int, Query(ge=0)]
FormIndex = Annotated[int, Form(ge=-1)]


def _log(context: Context, ti: TaskInstance, try_number: int) -> dict[str, Any]:
    """The try's log as the page opens on it: its tail, the earlier part a click away."""
    key = (ti.dag_id, ti.run_id, ti.task_id, ti.map_index)
    path = try_log(context.settings.logs_folder, key, try_number)
    live = ti.state == TaskInstanceState.RUNNING and try_number == ti.try_number
    if not path.is_file():
        where = f" (it ran on {ti.hostname})" if ti.hostname else ""
        note = (
            "The try has written no log yet."
            if live
            else f"No log of try {try_number} here{where}."
        )
        empty = {"text": "", "levels": [], "start": 0, "offset": 0, "size": 0, "live": live}
        return {**empty, "lines": [], "note": note, "window": LOG_WINDOW_BYTES}
    window = _window(read_tail(path, LOG_CHUNK_BYTES), live)
    lines = runs_of_levels(window["levels"], log_lines(window["text"]))
    note = "" if window["size"] else "The log is empty."
    return {**window, "lines": lines, "note": note, "window": LOG_WINDOW_BYTES}


def _window(window: LogWindow, live: bool) -> dict[str, Any]:
    return {
        "text": window.text,
        "levels": levels_of(window.text),
        "start": window.start,
        "offset": window.end,
        "size": window.size,
        "live": live,
    }


def log_lines(text: str) -> list[str]:
    """The lines of a window of log, split on newlines only (as the page's script splits)."""
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def runs_of_levels(levels: list[str], lines: list[str]) -> list[tuple[str, str]]:
    """Consecutive lines of one level joined, each ended by its newline: one element a run
    keeps a page of 256 KiB of short lines from doubling in markup."""
    runs: list[tuple[str, list[str]]] = []
    for level, line in zip(levels, lines, strict=True):
        if runs and runs[-1][0] == level:
            runs[-1][1].append(line)
        else:
            runs.append((level, [line]))
    return [(level, "".join(f"{line}\n" for line in run)) for level, run in runs]


def levels_of(text: str) -> list[str]:
    """Each line's level (``api/log_lines.py``), one per line of ``text``: the page colours and
    filters the lines by it. A traceback cut by a window's edge reads as its source's level."""
    return [line.level for line in parse(log_lines(text))]


def log_filename(key: TIKey, try_number: int) -> str:
    """A download's file name: the task instance and try, in characters every system keeps."""
    index = f"_{key.map_index}" if key.map_index >= 0 else ""
    name = f"{key.dag_id}__{key.run_id}__{key.task_id}{index}__try{try_number}.log"
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def _items(session: DbSession, ti: TaskInstance, offset: int) -> dict[str, Any]:
    """An iterable task instance's items: counts, one page of outcomes, the failed ones.

    While checkpoints hold the outcomes they are counted from them; once the try has folded
    them into its completion marker, the marker's totals are shown (``items_progress``).
    """
    key = TIKey(ti.dag_id, ti.run_id, ti.task_id, ti.map_index)
    view = items_view(session, key, ti.generation, offset, PAGE_SIZE)
    counts = view.counts
    if view.finished:
        progress = ItemsProgress(
            counts["success"], counts["failed"], counts["skipped"], ti.items_total
        )
    else:
        progress = items_progress(session, [key])[key]
    return {"progress": progress, "view": view, "offset": offset}


def _mapped(
    session: DbSession, dag_id: str, run_id: str, task_id: str, offset: int
) -> dict[str, Any]:
    """A mapped task's map indexes: counts per state, a page of them, the failed ones."""
    page = Page(limit=PAGE_SIZE, offset=offset, order_by=("map_index",))
    rows, total = list_task_instances(
        session, dag_id, run_id, page, TIFilter(task_id=task_id, mapped_only=True)
    )
    where = TIFilter(task_id=task_id, mapped_only=True, states=["failed"])
    failed, failed_total = list_task_instances(session, dag_id, run_id, Page(PAGE_SIZE), where)
    summary = task_summaries(session, dag_id, run_id, [task_id]).get(task_id)
    return {
        "summary": summary,
        "rows": [row.ti for row in rows],
        "total": total,
        "failed": [row.ti for row in failed],
        "failed_total": failed_total,
        "offset": offset,
    }


def _selected(session: DbSession, key: TIKey, mapped: bool) -> TaskInstance | None:
    """The task instance the page is about; None for the overview of a mapped task."""
    if mapped and key.map_index < 0:
        return None
    return get_task_instance(session, key).ti


def task_context(
    session: DbSession,
    context: Context,
    key: TIKey,
    try_number: int | None,
    offset: int,
    whole: bool = True,
) -> dict[str, Any]:
    """What the task page shows; without ``whole``, only its live part (state, tries, why)."""
    model = page_dag(session, key.dag_id)
    run = get_run(session, key.dag_id, key.run_id)
    structure = dag_view(model)
    spec = structure.tasks.get(key.task_id)
    if spec is None:
        raise NotFound(f"DAG {key.dag_id!r} has no task {key.task_id!r}")
    mapping = spec.mapping
    mapped = mapping is not None and mapping.expands
    ti = _selected(session, key, mapped)
    values: dict[str, Any] = {
        "dag": model, "run": run, "spec": spec, "key": key, "ti": ti, "when": when,
        "run_url": run_url(key.dag_id, key.run_id), "duration": duration,
        "task_url": task_url(key.dag_id, key.run_id, key.task_id, key.map_index),
        "base_url": task_url(key.dag_id, key.run_id, key.task_id),
        "kind": "" if mapping is None else ("mapped" if mapped else "iterable"),
    }  # fmt: skip
    values["live"] = run.state in (DagRunState.QUEUED, DagRunState.RUNNING)
    if ti is None:
        if not whole:
            return values
        return {**values, "mapped": _mapped(session, key.dag_id, key.run_id, key.task_id, offset)}
    chosen = min(try_number or ti.try_number, ti.try_number)
    index = f"map_index={key.map_index}" + (f"&try_number={try_number}" if try_number else "")
    values |= {
        "try_number": chosen,
        "live_url": f"{values['base_url']}/partials/live?{index}",
        "body_url": f"{values['base_url']}/partials/body?{index}",
        # The page follows its task instance: a new try or state reloads the log and values
        # below the live part, unless the reader chose a try (pages.js).
        "version": f"{ti.try_number}:{ti.state}",
        "pinned": try_number is not None,
        "waiting": waiting_reasons(session, model, run, structure, ti),
        "tries": tries_of(session, ti),
    }
    if not whole:
        return values
    page = Page(limit=PAGE_SIZE)
    values |= {
        "log": _log(context, ti, chosen) if chosen > 0 else None,
        "xcoms": list_xcoms(session, key, page, all_map_indexes=False),
        "states": task_state_values(session, key, page),
        "items": _items(session, ti, offset) if values["kind"] == "iterable" else None,
    }
    return values


def _question(
    session: DbSession, values: dict[str, Any], user: Principal, request: Request
) -> dict[str, Any] | None:
    """A human-in-the-loop task's question and its form (api/pages/hitl.py)."""
    ti = values.get("ti")
    return None if ti is None else question_context(session, ti, user, request.query_params)


@router.get(TASK_PAGE, response_class=HTMLResponse)
def task_page(
    request: Request,
    dag_id: str,
    run_id: str,
    task_id: str,
    user: PageUser,
    session: DbSession,
    context: Context,
    map_index: MapIndex = -1,
    try_number: Annotated[int | None, Query(ge=1)] = None,
    offset: Offset = 0,
) -> Response:
    key = TIKey(dag_id, run_id, task_id, map_index)
    try:
        values = task_context(session, context, key, try_number, offset)
    except MISSING as error:
        return missing(request, error)
    values["question"] = _question(session, values, user, request)
    return render(request, "runs/task.html", {**values, "may_run": user.may(Role.USER)})


@router.get(TASK_PAGE + "/partials/live", response_class=HTMLResponse)
def task_live_partial(
    request: Request,
    dag_id: str,
    run_id: str,
    task_id: str,
    user: PageUser,
    session: DbSession,
    context: Context,
    map_index: MapIndex = -1,
    try_number: Annotated[int | None, Query(ge=1)] = None,
) -> Response:
    """The task page's live part alone: its state, actions, why it waits, its tries."""
    key = TIKey(dag_id, run_id, task_id, map_index)
    try:
        values = task_context(session, context, key, try_number, 0, whole=False)
    except MISSING as error:
        return missing(request, error)
    return render(request, "runs/_task_live.html", {**values, "may_run": user.may(Role.USER)})


@router.get(TASK_PAGE + "/partials/body", response_class=HTMLResponse)
def task_body_partial(
    request: Request,
    dag_id: str,
    run_id: str,
    task_id: str,
    user: PageUser,
    session: DbSession,
    context: Context,
    map_index: MapIndex = -1,
    try_number: Annotated[int | None, Query(ge=1)] = None,
) -> Response:
    """The part below the live one: the chosen try's log, the items, XComs and state values."""
    key = TIKey(dag_id, run_id, task_id, map_index)
    try:
        values = task_context(session, context, key, try_number, 0)
    except MISSING as error:
        return missing(request, error)
    values["question"] = _question(session, values, user, request)
    return render(request, "runs/_task_body.html", {**values, "may_run": user.may(Role.USER)})


@router.post(TASK_PAGE + "/note")
def note_task(
    request: Request,
    dag_id: str,
    run_id: str,
    task_id: str,
    who: PageActingRunner,
    __: FormPost,
    session: DbSession,
    note: Annotated[str, Form(max_length=MAX_NOTE_CHARS)] = "",
    map_index: FormIndex = -1,
) -> Response:
    """Write the task instance's note (empty: remove it), as the signed-in user."""
    try:
        run = get_run(session, dag_id, run_id)
        ti = get_task_instance(session, TIKey(dag_id, run_id, task_id, map_index)).ti
    except MISSING as error:
        return missing(request, error)
    set_ti_note(session, ti, note, who.user)
    about = about_ti(ti, run.logical_date)
    record_event(session, who, "patch_task_instance", about, {"note": note})
    return RedirectResponse(task_url(dag_id, run_id, task_id, map_index), status.HTTP_303_SEE_OTHER)


@router.get(TASK_PAGE + "/log")
def task_log_tail(
    dag_id: str,
    run_id: str,
    task_id: str,
    _: PageUser,
    session: DbSession,
    context: Context,
    try_number: Annotated[int, Query(ge=1)],
    map_index: MapIndex = -1,
    offset: Offset | None = None,
    before: Offset | None = None,
) -> Response:
    """A window of the log, for the page: ``{text, start, offset, size, live}``.

    ``offset``: the lines after it (to follow the log; far behind, the tail instead, and
    ``start`` says so); ``before``: the lines before it (to page back); neither: the tail.
    """
    if offset is not None and before is not None:
        return JSONResponse({"detail": "give offset or before, not both"}, 400)
    try:
        ti = get_task_instance(session, TIKey(dag_id, run_id, task_id, map_index)).ti
    except MISSING as error:
        return JSONResponse({"detail": str(error)}, status.HTTP_404_NOT_FOUND)
    path = try_log(context.settings.logs_folder, (dag_id, run_id, task_id, map_index), try_number)
    live = ti.state == TaskInstanceState.RUNNING and try_number == ti.try_number
    if not path.is_file():
        at = offset or 0
        empty = {"text": "", "levels": [], "start": at, "offset": at, "size": 0, "live": live}
        return JSONResponse(empty)
    return JSONResponse(_window(_log_window(path, offset, before), live))


@router.get(TASK_PAGE + "/log/download")
def task_log_download(
    dag_id: str,
    run_id: str,
    task_id: str,
    _: PageUser,
    session: DbSession,
    context: Context,
    try_number: Annotated[int, Query(ge=1)],
    map_index: MapIndex = -1,
) -> Response:
    """The whole log of one try as a text file (streamed from disk: a log may be 100 MiB)."""
    key = TIKey(dag_id, run_id, task_id, map_index)
    try:
        ti = get_task_instance(session, key).ti
    except MISSING as error:
        return PlainTextResponse(f"{error}\n", status.HTTP_404_NOT_FOUND)
    path = try_log(context.settings.logs_folder, (dag_id, run_id, task_id, map_index), try_number)
    if try_number > ti.try_number or not path.is_file():
        where = f" (it ran on {ti.hostname})" if ti.hostname else ""
        detail = f"no log of try {try_number} of {task_id} on this server{where}\n"
        return PlainTextResponse(detail, status.HTTP_404_NOT_FOUND)
    return FileResponse(
        path, media_type="text/plain; charset=utf-8", filename=log_filename(key, try_number)
    )


def _log_window(path: Path, offset: int | None, before: int | None) -> LogWindow:
    if before is not None:
        return read_before(path, before, LOG_CHUNK_BYTES)
    if offset is None or path.stat().st_size - offset > LOG_CHUNK_BYTES:
        # A follower this far behind would fetch every chunk in between: it jumps to the tail.
        return read_tail(path, LOG_CHUNK_BYTES)
    return read_after(path, offset, LOG_CHUNK_BYTES)


def _chosen_tis(
    session: DbSession, run: DagRun, task_id: str, map_index: int
) -> list[TaskInstance]:
    if map_index >= 0:
        return [get_task_instance(session, TIKey(run.dag_id, run.run_id, task_id, map_index)).ti]
    where = TIFilter(task_id=task_id)
    rows, _ = list_task_instances(
        session, run.dag_id, run.run_id, Page(limit=MAX_PAGE_LIMIT), where
    )
    return [row.ti for row in rows]


@router.post(TASK_PAGE + "/clear")
def clear_task(
    request: Request,
    dag_id: str,
    run_id: str,
    task_id: str,
    who: PageActingRunner,
    __: FormPost,
    session: DbSession,
    context: Context,
    map_index: FormIndex = -1,
) -> Response:
    """Clear the task (every map index of a mapped one): it runs again (the page's dialog
    posts to ``…/recover`` instead, after listing what changes)."""
    try:
        run = get_run(session, dag_id, run_id)
        tis = _chosen_tis(session, run, task_id, -1)
        plan = plan_clear(session, dag_id, Runs(run_id), [task_id], Scope())
        apply_plan(session, plan, who.user, context.purgers)
        for about in about_tis(tis, run.logical_date):
            record_event(session, who, "post_clear_task_instances", about)
    except MISSING as error:
        return missing(request, error)
    return RedirectResponse(task_url(dag_id, run_id, task_id, map_index), status.HTTP_303_SEE_OTHER)


@router.post(TASK_PAGE + "/mark/{state}")
def mark_task(
    request: Request,
    dag_id: str,
    run_id: str,
    task_id: str,
    state: TaskInstanceState,
    who: PageActingRunner,
    __: FormPost,
    session: DbSession,
    map_index: FormIndex = -1,
) -> Response:
    """Mark the task instance (or every map index of a mapped task) success or failed."""
    target: list[Target] = [task_id if map_index < 0 else (task_id, map_index)]
    try:
        run = get_run(session, dag_id, run_id)
        plan = plan_mark(session, dag_id, run_id, target, Scope(), state)
        apply_plan(session, plan, who.user)
        for ti in _chosen_tis(session, run, task_id, map_index):
            about = about_ti(ti, run.logical_date)
            record_event(session, who, "patch_task_instance", about, {"new_state": state})
    except MISSING as error:
        return missing(request, error)
    return RedirectResponse(task_url(dag_id, run_id, task_id, map_index), status.HTTP_303_SEE_OTHER)
