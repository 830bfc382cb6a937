"""Human-in-the-loop questions, as the API and the pages show them (docs/hitl.md)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from state.core import DagRun, HITLDetail, Page, TaskInstance, TaskInstanceState, page_of


@dataclass(frozen=True)
class Question:
    """A question with the task instance that asks it and its run's dates."""

    detail: HITLDetail
    ti: TaskInstance
    logical_date: dt.datetime | None
    run_after: dt.datetime | None

    @property
    def answered(self) -> bool:
        return self.detail.responded_at is not None


def question_of(session: Session, ti_id: int) -> HITLDetail | None:
    """The question of task instance ``ti_id``, if it asked one."""
    return session.get(HITLDetail, ti_id)


@dataclass(frozen=True)
class QuestionFilter:
    """What the list of questions is narrowed to (None: any)."""

    dag_id: str | None = None
    run_id: str | None = None
    task_id: str | None = None
    map_index: int | None = None
    state: tuple[str, ...] = ()
    response_received: bool | None = None
    subject_search: str | None = None
    body_search: str | None = None
    dag_id_pattern: str | None = None
    task_id_pattern: str | None = None


#: What the list orders by (Airflow's names); newest first unless told.
_ORDERS: dict[str, Any] = {
    "ti_id": HITLDetail.ti_id,
    "subject": HITLDetail.subject,
    "created_at": HITLDetail.created_at,
    "responded_at": HITLDetail.responded_at,
    "dag_id": TaskInstance.dag_id,
    "run_id": TaskInstance.run_id,
    "task_instance_state": TaskInstance.state,
    "run_after": DagRun.created_at,
}


def list_questions(
    session: Session, where: QuestionFilter, page: Page
) -> tuple[list[Question], int]:
    """A page of questions, newest first, with the total of the filter."""
    query = (
        select(HITLDetail, TaskInstance, DagRun.logical_date, DagRun.created_at)
        .join(TaskInstance, TaskInstance.id == HITLDetail.ti_id)
        .join(
            DagRun,
            (DagRun.dag_id == TaskInstance.dag_id) & (DagRun.run_id == TaskInstance.run_id),
        )
    )
    conditions: list[Any] = []
    if where.dag_id is not None:
        conditions.append(TaskInstance.dag_id == where.dag_id)
    if where.run_id is not None:
        conditions.append(TaskInstance.run_id == where.run_id)
    if where.task_id is not None:
        conditions.append(TaskInstance.task_id == where.task_id)
    if where.map_index is not None:
        conditions.append(TaskInstance.map_index == where.map_index)
    if where.state:
        conditions.append(TaskInstance.state.in_(list(where.state)))
    if where.response_received is True:
        conditions.append(HITLDetail.responded_at.is_not(None))
    elif where.response_received is False:
        conditions.append(HITLDetail.responded_at.is_(None))
    searches = (
        (HITLDetail.subject, where.subject_search),
        (HITLDetail.body, where.body_search),
        (TaskInstance.dag_id, where.dag_id_pattern),
        (TaskInstance.task_id, where.task_id_pattern),
    )
    for column, text in searches:
        if text:
            conditions.append(column.ilike(f"%{text}%"))
    rows, total = page_of(
        session, query.where(*conditions), page, _ORDERS, ("-created_at", "-ti_id")
    )
    return [Question(*row) for row in rows], total


def waiting_questions(session: Session, dag_id: str, run_id: str) -> list[Question]:
    """The run's task instances waiting for an answer, with their questions."""
    found, _total = list_questions(
        session,
        QuestionFilter(
            dag_id=dag_id,
            run_id=run_id,
            state=(TaskInstanceState.AWAITING_INPUT,),
            response_received=False,
        ),
        Page(limit=1000),
    )
    return found
