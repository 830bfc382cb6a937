"""The UI's clear and mark: a confirmation dialog listing what changes, then the change.

Every Clear / Mark button of the pages (a task, a task group, a run, the rows picked in a list)
opens one dialog (``templates/recover/dialog.html``, ``static/recover.js``). The dialog posts
its form to ``…/recover/preview``, which answers the list of task instances that would change
(the plan of ``state.engine.recover``: the same the API's dry runs answer); each scope checkbox
ticked posts it again. Confirming posts the same form to ``…/recover``, which plans again in
its own transaction and applies that plan, then goes back to the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Form, Request, status
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel
from sqlalchemy.orm import Session

from api.audit import PageActingRunner, about_run, record_plan
from api.csrf import FormPost
from api.deps import Context, DbSession, PageCanRun
from api.pages.common import back_to, flash, local_path
from api.templating import render
from state.core import DagRunState, NotFound, TaskInstance, TaskInstanceState, structure_of
from state.engine import (
    BadScope,
    Change,
    MarkerDepthExceeded,
    Plan,
    Runs,
    Scope,
    Target,
    UnknownDag,
    UnknownTask,
    apply_plan,
    get_dag_model,
    group_task_ids,
    plan_clear,
    plan_mark,
    plan_run_mark,
)
from state.records import Actor, record_event
from state.views import get_run

router = APIRouter(include_in_schema=False)
PATH = "/dags/{dag_id}/recover"
#: The rows a dialog lists; past that it says how many more (the counts stay exact).
SHOWN = 200
REFUSED = (BadScope, NotFound, UnknownDag, UnknownTask, MarkerDepthExceeded, ValueError)


class RecoverForm(BaseModel):
    """What a Clear / Mark dialog sends: what to act on, how, and the scope's checkboxes.

    ``kind``: ``task`` (``task_id``, ``map_index``), ``group`` (``group_id``), ``tis`` (the
    ``pick``s: ``task_id`` or ``task_id:map_index``), each in the run ``run_id``; or ``runs``
    (the ``pick``s are run ids, else ``run_id``).
    """

    action: Literal["clear", "mark"]
    kind: Literal["task", "group", "tis", "runs"]
    state: str = ""
    run_id: str = ""
    task_id: str = ""
    map_index: int = -1
    group_id: str = ""
    pick: list[str] = []
    upstream: bool = False
    downstream: bool = False
    past: bool = False
    future: bool = False
    only_failed: bool = False
    only_running: bool = False
    next: str = ""

    @property
    def scope(self) -> Scope:
        return Scope(
            self.upstream,
            self.downstream,
            self.past,
            self.future,
            self.only_failed,
            self.only_running,
        )


Recover = Annotated[RecoverForm, Form()]


def _targets(session: Session, dag_id: str, form: RecoverForm) -> list[Target]:
    if form.kind == "task":
        return [form.task_id if form.map_index < 0 else (form.task_id, form.map_index)]
    if form.kind == "group":
        return list(group_task_ids(structure_of(get_dag_model(session, dag_id)), form.group_id))
    picked: list[Target] = []
    for value in form.pick:
        task_id, _, index = value.partition(":")
        picked.append((task_id, int(index)) if index else task_id)
    if not picked:
        raise BadScope("no task instance picked")
    return picked


def plan_of(session: Session, dag_id: str, form: RecoverForm) -> Plan:
    """The plan the dialog's form asks for (the preview lists it, the confirmation applies it)."""
    if form.kind == "runs":
        return _runs_plan(session, dag_id, form)
    targets = _targets(session, dag_id, form)
    if form.action == "clear":
        return plan_clear(session, dag_id, Runs(form.run_id), targets, form.scope)
    state = TaskInstanceState(form.state)
    return plan_mark(session, dag_id, form.run_id, targets, form.scope, state)


def _runs_plan(session: Session, dag_id: str, form: RecoverForm) -> Plan:
    run_ids = form.pick or [form.run_id]
    runs = [get_run(session, dag_id, run_id) for run_id in run_ids if run_id]
    if not runs:
        raise BadScope("no run picked")
    if form.action == "mark":
        return plan_run_mark(session, runs, DagRunState(form.state))
    changes: dict[int, Change] = {}
    for run in runs:
        plan = plan_clear(session, dag_id, Runs(run.run_id), None, form.scope)
        changes.update((change.ti.id, change) for change in plan.changes)
    return Plan("clear", tuple(changes.values()))


@router.post(PATH + "/preview", response_class=HTMLResponse)
def preview(
    request: Request, dag_id: str, form: Recover, _: PageCanRun, __: FormPost, session: DbSession
) -> Response:
    """The dialog's list: what the form would change, changing nothing."""
    try:
        plan = plan_of(session, dag_id, form)
    except REFUSED as error:
        refused = {"error": str(error).strip("'\"")}
        return render(request, "recover/list.html", refused, status.HTTP_400_BAD_REQUEST)
    values: dict[str, Any] = {"plan": plan, "shown": plan.changes[:SHOWN], "form": form}
    return render(request, "recover/list.html", values)


@router.post(PATH)
def recover(
    request: Request,
    dag_id: str,
    form: Recover,
    who: PageActingRunner,
    __: FormPost,
    session: DbSession,
    context: Context,
) -> Response:
    """Apply what the dialog listed (planned again here), then back to the page; each task
    (or run) changed is one row of the event log, by the signed-in user."""
    back = local_path(form.next, f"/dags/{dag_id}")
    try:
        plan = plan_of(session, dag_id, form)
        done = apply_plan(session, plan, who.user, context.purgers)
        _record(session, who, form, plan, done)
    except REFUSED as error:
        flash(request, str(error).strip("'\""), "error")
        return back_to(back)
    flash(request, summary(form, len(done), len(plan.runs_marked)))
    return back_to(back)


def _record(
    session: Session, who: Actor, form: RecoverForm, plan: Plan, done: Sequence[TaskInstance]
) -> None:
    """Airflow's event names: a clear of task instances or of runs, a mark of either."""
    extra: dict[str, Any] = {"scope": asdict(form.scope)}
    if form.kind == "runs":
        event = "clear_dag_run" if form.action == "clear" else "patch_dag_run"
        for run in {change.run.run_id: change.run for change in plan.changes}.values():
            record_event(session, who, event, about_run(run), {**extra, "state": form.state})
        return
    event = "post_clear_task_instances" if form.action == "clear" else "patch_task_instance"
    record_plan(session, who, event, plan, done, {**extra, "state": form.state or None})


def summary(form: RecoverForm, count: int, runs: int) -> str:
    """``Cleared 3 task instances.``, ``Marked 2 runs failed (5 task instances).``"""
    noun = "task instance" if count == 1 else "task instances"
    if form.action == "clear":
        return f"Cleared {count} {noun}."
    if runs:
        run_noun = "run" if runs == 1 else "runs"
        return f"Marked {runs} {run_noun} {form.state} ({count} {noun})."
    return f"Marked {count} {noun} {form.state}."
