"""The task page's "Required action": a human-in-the-loop task's question, its form, and the
answer once given (docs/hitl.md).

The form is built from the question: one radio button per option (check boxes when several may
be chosen), one field per entry of its ``params`` by the field's JSON Schema (a number, a
check box, a list to choose from, JSON for lists and objects, else text). Only a user whose role
may run tasks, and who is one of the assigned users when the question names some, sees the
form; the answer goes through ``state.engine.answer``, as the API's ``PATCH …/hitlDetails``.
Query parameters prefill it (``_options`` and the fields' names), as Airflow's links do.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request, status
from fastapi.responses import RedirectResponse, Response
from starlette.datastructures import FormData, QueryParams

from api.audit import PageActingRunner, answer_as
from api.csrf import FormPost
from api.deps import DbSession, Principal
from api.pages.common import flash
from api.pages.runs import MISSING, TASK_PAGE, missing, task_url
from state.core import HITLDetail, TaskInstance, TaskInstanceState
from state.engine import AnswerRefused, is_assignee
from state.records import Role, TIKey
from state.views import get_task_instance, question_of

router = APIRouter(include_in_schema=False)
FormIndex = Annotated[int, Form(ge=-1)]
FIELD_PREFIX = "param:"


def question_context(
    session: DbSession, ti: TaskInstance, user: Principal, query: QueryParams
) -> dict[str, Any] | None:
    """What the task page shows of ``ti``'s question; None when it asked none."""
    detail = question_of(session, ti.id)
    if detail is None:
        return None
    waiting = (
        ti.state == TaskInstanceState.AWAITING_INPUT
        and detail.responded_at is None
        and detail.try_number == ti.try_number
    )
    prefill = query.getlist("_options")
    chosen = [o for o in prefill if o in detail.options] or list(detail.defaults or [])
    return {
        "detail": detail,
        "waiting": waiting,
        "may_answer": _may_answer(detail, user),
        "chosen": chosen,
        "fields": [_field(name, spec, query.get(name)) for name, spec in detail.params.items()],
    }


def _may_answer(detail: HITLDetail, user: Principal) -> bool:
    me = {"id": user.username, "name": user.username}
    return user.may(Role.USER) and is_assignee(detail.assignees, me)


def _field(name: str, spec: Any, given: str | None) -> dict[str, Any]:
    """One form field: its name, label, kind of input and value to show."""
    spec = spec if isinstance(spec, dict) else {"value": spec, "schema": {}}
    schema = dict(spec.get("schema") or {})
    kind = _kind(schema)
    value = spec.get("value") if given is None else given
    if kind == "json" and not isinstance(value, str):
        value = json.dumps(value)
    return {
        "name": name,
        "input": FIELD_PREFIX + name,
        "label": schema.get("title") or name,
        "description": spec.get("description") or schema.get("description"),
        "kind": kind,
        "value": value,
        "choices": list(schema.get("enum") or []),
        "required": not _nullable(schema),
    }


def _kind(schema: dict[str, Any]) -> str:
    if schema.get("enum"):
        return "choice"
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds or [])
    kinds = [kind for kind in kinds if kind != "null"]
    if kinds == ["boolean"]:
        return "boolean"
    if kinds == ["integer"]:
        return "integer"
    if kinds == ["number"]:
        return "number"
    if kinds and set(kinds) <= {"array", "object"}:
        return "json"
    return "text"


def _nullable(schema: dict[str, Any]) -> bool:
    kinds = schema.get("type")
    return kinds is None or kinds == "null" or (isinstance(kinds, list) and "null" in kinds)


def _value(kind: str, text: str, nullable: bool, name: str) -> Any:
    """The typed value of a submitted field (``AnswerRefused`` naming a bad one)."""
    if text == "" and (nullable or kind != "text"):
        return None
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
        if kind == "boolean":
            return text == "true"
        if kind == "json":
            return json.loads(text)
    except ValueError:
        raise AnswerRefused(
            400, f"{name}: {text!r} is not {'an' if kind[0] in 'aeiou' else 'a'} {kind}"
        ) from None
    return text


def form_answer(detail: HITLDetail, form: FormData) -> tuple[list[str], dict[str, Any]]:
    """The options and the typed values a submitted form gives."""
    chosen = [str(option) for option in form.getlist("chosen")]
    given: dict[str, Any] = {}
    for name, spec in detail.params.items():
        schema = dict((spec.get("schema") if isinstance(spec, dict) else None) or {})
        kind = _kind(schema)
        text = form.get(FIELD_PREFIX + name)
        if kind == "boolean" and text is None:
            text = "false"  # an unchecked box sends nothing
        if text is None:
            continue
        given[name] = _value(kind, str(text), _nullable(schema), name)
    return chosen, given


@router.post(TASK_PAGE + "/answer")
async def answer_question(
    request: Request,
    dag_id: str,
    run_id: str,
    task_id: str,
    who: PageActingRunner,
    __: FormPost,
    session: DbSession,
    map_index: FormIndex = -1,
) -> Response:
    """A person's answer from the task page's form; a refusal is shown there in one line."""
    back = RedirectResponse(task_url(dag_id, run_id, task_id, map_index), status.HTTP_303_SEE_OTHER)
    try:
        ti = get_task_instance(session, TIKey(dag_id, run_id, task_id, map_index)).ti
    except MISSING as error:
        return missing(request, error)
    detail = question_of(session, ti.id)
    try:
        if detail is None:
            raise AnswerRefused(404, "this task instance asks no question")
        chosen, given = form_answer(detail, await request.form())
        taken = answer_as(session, who, ti, chosen, given)
    except AnswerRefused as refused:
        flash(request, f"Not answered: {refused}", "error")
        return back
    flash(request, f"Answered {', '.join(taken.chosen_options)}: {task_id} resumes.")
    return back
