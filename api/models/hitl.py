"""Human-in-the-loop questions and answers as Airflow 3.3's API names them (``HITLDetail``,
``UpdateHITLDetailPayload``, ``HITLDetailResponse``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from api.models.task_instances import TaskInstanceResponse, ti_response
from state.core import HITLDetail
from state.views import Question, TIRow


class HITLUser(BaseModel):
    id: str
    name: str


class UpdateHITLDetailPayload(BaseModel):
    """A person's answer: the chosen options (at least one) and the form's values."""

    model_config = ConfigDict(extra="forbid")

    chosen_options: list[str] = Field(min_length=1)
    params_input: dict[str, Any] = Field(default_factory=dict)


class HITLDetailResponse(BaseModel):
    """What an answer wrote."""

    responded_by: HITLUser
    responded_at: dt.datetime
    chosen_options: list[str] = Field(min_length=1)
    params_input: dict[str, Any] = Field(default_factory=dict)


class HITLDetailModel(BaseModel):
    """A question, its answer if given, and the task instance asking it."""

    task_instance: TaskInstanceResponse
    options: list[str]
    subject: str
    body: str | None = None
    defaults: list[str] | None = None
    multiple: bool = False
    params: dict[str, Any] = Field(default_factory=dict)
    assigned_users: list[HITLUser] = Field(default_factory=list)
    created_at: dt.datetime
    responded_by_user: HITLUser | None = None
    responded_at: dt.datetime | None = None
    chosen_options: list[str] | None = None
    params_input: dict[str, Any] = Field(default_factory=dict)
    response_received: bool = False


class HITLDetailCollection(BaseModel):
    hitl_details: list[HITLDetailModel]
    total_entries: int


def hitl_detail(question: Question) -> HITLDetailModel:
    row: HITLDetail = question.detail
    run_after = question.run_after or row.created_at
    return HITLDetailModel(
        task_instance=ti_response(TIRow(question.ti, question.logical_date, run_after)),
        options=list(row.options),
        subject=row.subject,
        body=row.body,
        defaults=row.defaults,
        multiple=row.multiple,
        params=dict(row.params or {}),
        assigned_users=[HITLUser(**user) for user in row.assignees or []],
        created_at=row.created_at,
        responded_by_user=HITLUser(**row.responded_by) if row.responded_by else None,
        responded_at=row.responded_at,
        chosen_options=row.chosen_options,
        params_input=dict(row.params_input or {}),
        response_received=row.responded_at is not None,
    )
