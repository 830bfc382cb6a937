"""Airflow 3.3's human-in-the-loop routes: read a task instance's question, answer it, list
questions (docs/hitl.md).

``PATCH …/taskInstances/{task_id}/{map_index}/hitlDetails`` takes an answer from a user whose
role may run tasks (and who is among the question's assigned users, when it names some): it is
checked against the question, written, and resumes the waiting try, in one transaction
(``state.engine.answer``); a bad answer is refused in one line and changes nothing.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query
from sqlalchemy.orm import Session

from api.audit import ActingRunner, answer_as
from api.deps import CanRead, DbSession
from api.models.hitl import (
    HITLDetailCollection,
    HITLDetailModel,
    HITLDetailResponse,
    HITLUser,
    UpdateHITLDetailPayload,
    hitl_detail,
)
from api.paging import MAX_SQL_INT, OptionalMapIndex, Paging, TryNumberPath
from state.engine import AnswerRefused
from state.records import TIKey
from state.views import Question, QuestionFilter, get_task_instance, list_questions, question_of

router = APIRouter(tags=["Task Instance"])
RUN_PATH = "/dags/{dag_id}/dagRuns/{dag_run_id}"
HITL_PATH = RUN_PATH + "/taskInstances/{task_id}/{map_index}/hitlDetails"
States = Annotated[list[str] | None, Query()]
MapIndex = Annotated[int, Path(ge=-1, le=MAX_SQL_INT)]


def _question(session: Session, dag_id: str, run_id: str, task_id: str, map_index: int) -> Question:
    """The task instance's question (404 when the task instance asks none, or does not exist)."""
    row = get_task_instance(session, TIKey(dag_id, run_id, task_id, map_index))
    detail = question_of(session, row.ti.id)
    if detail is None:
        raise HTTPException(
            404,
            f"task instance {task_id!r} (map index {map_index}) of run {run_id!r} of DAG "
            f"{dag_id!r} has no human-in-the-loop question",
        )
    return Question(detail, row.ti, row.logical_date, row.run_after)


@router.patch(HITL_PATH)
def update_hitl_detail(
    dag_id: str,
    dag_run_id: str,
    task_id: str,
    map_index: MapIndex,
    body: UpdateHITLDetailPayload,
    who: ActingRunner,
    session: DbSession,
) -> HITLDetailResponse:
    question = _question(session, dag_id, dag_run_id, task_id, map_index)
    ti = question.ti
    try:
        taken = answer_as(session, who, ti, body.chosen_options, body.params_input)
    except AnswerRefused as refused:
        raise HTTPException(refused.status, str(refused)) from None
    assert taken.responded_by is not None  # a person answered
    return HITLDetailResponse(
        responded_by=HITLUser(**taken.responded_by),
        responded_at=taken.responded_at,
        chosen_options=taken.chosen_options,
        params_input=taken.params_input,
    )


@router.get(HITL_PATH)
def get_hitl_detail(
    dag_id: str, dag_run_id: str, task_id: str, map_index: MapIndex, _: CanRead, session: DbSession
) -> HITLDetailModel:
    return hitl_detail(_question(session, dag_id, dag_run_id, task_id, map_index))


@router.get(HITL_PATH + "/tries/{try_number}")
def get_hitl_detail_try_detail(
    dag_id: str,
    dag_run_id: str,
    task_id: str,
    map_index: MapIndex,
    try_number: TryNumberPath,
    _: CanRead,
    session: DbSession,
) -> HITLDetailModel:
    """The question of one try: the store keeps the latest asking try's."""
    question = _question(session, dag_id, dag_run_id, task_id, map_index)
    if question.detail.try_number != try_number:
        raise HTTPException(
            404, f"try {try_number} of task instance {task_id!r} asked no question kept here"
        )
    return hitl_detail(question)


@router.get(RUN_PATH + "/hitlDetails")
def get_hitl_details(
    dag_id: str,
    dag_run_id: str,
    _: CanRead,
    session: DbSession,
    page: Paging,
    task_id: str | None = None,
    map_index: OptionalMapIndex = None,
    state: States = None,
    response_received: bool | None = None,
    subject_search: str | None = None,
    body_search: str | None = None,
    dag_id_pattern: str | None = None,
    task_id_pattern: str | None = None,
) -> HITLDetailCollection:
    """Questions, newest first; ``~`` for every DAG or every run."""
    where = QuestionFilter(
        dag_id=None if dag_id == "~" else dag_id,
        run_id=None if dag_run_id == "~" else dag_run_id,
        task_id=task_id,
        map_index=map_index,
        state=tuple(state or ()),
        response_received=response_received,
        subject_search=subject_search,
        body_search=body_search,
        dag_id_pattern=dag_id_pattern,
        task_id_pattern=task_id_pattern,
    )
    found, total = list_questions(session, where, page)
    return HITLDetailCollection(
        hitl_details=[hitl_detail(question) for question in found], total_entries=total
    )
