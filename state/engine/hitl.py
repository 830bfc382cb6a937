"""Human-in-the-loop questions and their answers in the store (docs/hitl.md).

A human-in-the-loop task ends its try ``running -> awaiting_input`` (no try consumed, its slot
freed, no trigger: nothing runs while a person thinks) and writes its question in the same
transaction (``ask``, from ``state.engine.end.record_end``). Then either:

- a person answers (``answer``: the API's ``PATCH .../hitlDetails`` and the task page's form):
  the answer is checked against the question (options, ``multiple``, the form's schemas, who
  may answer), written, and the task instance goes back to ``scheduled`` for the same try with
  the answer as its ``event``, in one transaction holding the task instance's row;
- or its timeout passes first (``time_out_questions``, from the scheduler's loop): its
  ``defaults`` answer (with the form's defaults), or, without defaults, the try resumes with a
  timeout error that fails it in ``execute_complete``, as Airflow's does.

A cleared or marked task instance no longer waits: its question stays (the page shows what was
asked) but can no longer be answered, and a new try asks it anew.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from state.core import HITL_TABLE, TI_TABLE, TaskInstanceState, utcnow
from state.engine.deferral import resume_waiting
from tradewind.params import ParamValidationError, check_value
from tradewind.triggers.base import encode_kwargs

TI = TaskInstanceState
_HITL = HITL_TABLE
_TI = TI_TABLE

#: The error a question without defaults resumes with when its timeout passes.
TIMED_OUT = "the human-in-the-loop response timeout has passed without a response"


class AnswerRefused(ValueError):
    """An answer that cannot be taken, in one line; ``status`` is the HTTP status it means
    (400 a bad answer, 403 not one of the assignees, 404 no question, 409 already answered
    or no longer waited for)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def ask(
    session: Session,
    ti_id: int,
    try_number: int,
    question: Mapping[str, Any],
    timeout_seconds: float | None,
    at: dt.datetime,
) -> None:
    """Store the question of a try that asks (a new try's replaces an earlier one's)."""
    session.execute(delete(_HITL).where(_HITL.c.ti_id == ti_id))
    timeout_at = at + dt.timedelta(seconds=timeout_seconds) if timeout_seconds else None
    session.execute(
        _HITL.insert().values(
            ti_id=ti_id,
            try_number=try_number,
            subject=str(question.get("subject") or ""),
            body=question.get("body"),
            options=list(question.get("options") or []),
            multiple=bool(question.get("multiple")),
            defaults=question.get("defaults"),
            params=dict(question.get("params") or {}),
            assignees=question.get("assigned_users") or None,
            created_at=at,
            timeout_at=timeout_at,
            params_input={},
        )
    )


@dataclass(frozen=True)
class Answered:
    """An answer taken: what was written, and whether it woke the task instance."""

    chosen_options: list[str]
    params_input: dict[str, Any]
    responded_by: dict[str, str] | None
    responded_at: dt.datetime
    resumed: bool


def answer(
    session: Session,
    ti_id: int,
    user: Mapping[str, str],
    chosen_options: Sequence[str],
    params_input: Mapping[str, Any] | None = None,
    now: dt.datetime | None = None,
) -> Answered:
    """Take ``user``'s answer to the question of ``ti_id``; ``AnswerRefused`` in one line.

    The task instance's row is locked first, then the question's (a clear locks the task
    instance too): an answer racing a clear either resumes the try or finds it cleared.
    """
    now = now or utcnow()
    ti = session.execute(
        select(_TI.c.state, _TI.c.try_number).where(_TI.c.id == ti_id).with_for_update()
    ).first()
    row = session.execute(select(_HITL).where(_HITL.c.ti_id == ti_id).with_for_update()).first()
    if ti is None or row is None:
        raise AnswerRefused(404, "this task instance asks no human-in-the-loop question")
    if row.responded_at is not None:
        who = (row.responded_by or {}).get("name") or "its defaults (timeout)"
        raise AnswerRefused(
            409, f"already answered, by {who} at {row.responded_at:%Y-%m-%d %H:%M:%S} UTC"
        )
    waiting = ti.state == TI.AWAITING_INPUT and ti.try_number == row.try_number
    if not waiting:
        raise AnswerRefused(
            409, f"the task instance no longer waits for an answer (it is {ti.state})"
        )
    _check_assignee(row.assignees, user)
    chosen = _check_options(row.options, row.multiple, chosen_options)
    given = _check_params(row.params or {}, params_input or {})
    responder = {"id": str(user["id"]), "name": str(user["name"])}
    session.execute(
        _HITL.update()
        .where(_HITL.c.ti_id == ti_id)
        .values(
            chosen_options=chosen,
            params_input=given,
            responded_by=responder,
            responded_at=now,
        )
    )
    payload = _event(chosen, given, now, responder, timed_out=False)
    resumed = _resume(session, ti_id, row.try_number, payload)
    return Answered(chosen, given, responder, now, resumed)


def is_assignee(assignees: list[dict[str, str]] | None, user: Mapping[str, str]) -> bool:
    """Whether ``user`` may answer a question that names ``assignees`` (none: anybody), by
    user id or name, either matching an assignee's id or name."""
    if not assignees:
        return True
    allowed = {str(a.get("id")) for a in assignees} | {str(a.get("name")) for a in assignees}
    return str(user["id"]) in allowed or str(user["name"]) in allowed


def _check_assignee(assignees: list[dict[str, str]] | None, user: Mapping[str, str]) -> None:
    if not is_assignee(assignees, user):
        names = ", ".join(str(a.get("name") or a.get("id")) for a in assignees or ())
        raise AnswerRefused(403, f"{user['name']} may not answer: the assigned users are {names}")


def _check_options(options: list[str], multiple: bool, chosen: Sequence[str]) -> list[str]:
    picked = list(chosen)
    if not picked:
        raise AnswerRefused(400, "choose at least one option")
    unknown = [option for option in picked if option not in options]
    if unknown:
        raise AnswerRefused(400, f"invalid options {unknown}: the options are {list(options)}")
    if not multiple and len(picked) > 1:
        raise AnswerRefused(400, "this question takes one option, not several")
    return list(dict.fromkeys(picked))


def _check_params(params: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """The form's values: each given one checked against its field's schema, the others
    taking their defaults; a name the form does not have is refused."""
    unknown = sorted(set(given) - set(params))
    if unknown:
        raise AnswerRefused(400, f"params_input names fields the form does not have: {unknown}")
    values: dict[str, Any] = {}
    for name, field in params.items():
        value = given[name] if name in given else _default(field)
        try:
            check_value(name, _schema(field), value)
        except ParamValidationError as error:
            raise AnswerRefused(400, str(error)) from None
        values[name] = value
    return values


def _schema(field: Any) -> dict[str, Any]:
    return dict(field.get("schema") or {}) if isinstance(field, dict) else {}


def _default(field: Any) -> Any:
    return field.get("value") if isinstance(field, dict) else field


def _event(
    chosen: list[str],
    given: dict[str, Any],
    at: dt.datetime,
    responder: dict[str, str] | None,
    *,
    timed_out: bool,
) -> dict[str, Any]:
    """What ``execute_complete`` reads, as Airflow's operators expect it."""
    return {
        "chosen_options": chosen,
        "params_input": given,
        "responded_at": at,
        "responded_by_user": responder,
        "timedout": timed_out,
    }


def _resume(session: Session, ti_id: int, try_number: int, event: dict[str, Any]) -> bool:
    """``awaiting_input -> scheduled`` for the same try, with ``event`` for its method."""
    resumed = resume_waiting(session, ti_id, try_number, TI.AWAITING_INPUT, encode_kwargs(event))
    if resumed:
        from state.engine.run_wake import notify_run_created

        notify_run_created(session)  # queued by the next pass: start it now
    return resumed


@dataclass(frozen=True)
class TimedOutQuestion:
    """A question its timeout answered: with its defaults, or (none) with an error."""

    ti_id: int
    dag_id: str
    run_id: str
    task_id: str
    defaults: list[str] | None


def time_out_questions(
    session: Session, now: dt.datetime | None = None, limit: int = 100
) -> list[TimedOutQuestion]:
    """Resume the waiting task instances whose question's timeout passed: with its defaults
    as the answer (``responded_by`` None), or with a timeout error when it has none."""
    now = now or utcnow()
    due = session.execute(
        select(
            _HITL.c.ti_id,
            _HITL.c.try_number,
            _HITL.c.defaults,
            _HITL.c.params,
            _TI.c.dag_id,
            _TI.c.run_id,
            _TI.c.task_id,
        )
        .join(_TI, _TI.c.id == _HITL.c.ti_id)
        .where(
            _HITL.c.responded_at.is_(None),
            _HITL.c.timeout_at < now,
            _TI.c.state == TI.AWAITING_INPUT,
        )
        .limit(limit)
        .with_for_update(of=_TI, skip_locked=True)
    ).all()
    answered: list[TimedOutQuestion] = []
    for row in due:
        if row.defaults is not None:
            given = {name: _default(field) for name, field in (row.params or {}).items()}
            chosen = list(row.defaults)
            session.execute(
                _HITL.update()
                .where(_HITL.c.ti_id == row.ti_id)
                .values(chosen_options=chosen, params_input=given, responded_at=now)
            )
            event = _event(chosen, given, now, None, timed_out=True)
        else:
            event = {"error": TIMED_OUT, "error_type": "timeout"}
        if _resume(session, row.ti_id, row.try_number, event):
            answered.append(
                TimedOutQuestion(row.ti_id, row.dag_id, row.run_id, row.task_id, row.defaults)
            )
    return answered
