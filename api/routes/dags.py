"""``/api/v2/dags``: list, get, details, and pausing (``PATCH`` with ``is_paused``)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from sqlalchemy.orm import Session

from api.audit import ActingRunner
from api.deps import CanRead, DbSession
from api.models.dags import (
    DAGCollectionResponse,
    DAGDetailsResponse,
    DAGPatchBody,
    DAGResponse,
    dag_details,
    dag_response,
)
from api.paging import Paging
from api.structure import dag_view
from state.core import DagModel, DagRunState
from state.engine import get_dag_model
from state.records import About, record_event, set_paused
from state.views import DagFilter, count_runs_by_state, files_with_import_errors, list_dags

router = APIRouter(prefix="/dags", tags=["DAG"])


TagsMatch = Literal["any", "all"]


@router.get("")
def get_dags(
    _: CanRead,
    session: DbSession,
    page: Paging,
    paused: bool | None = None,
    dag_id_pattern: str | None = None,
    dag_display_name_pattern: str | None = None,
    exclude_stale: bool = True,
    tags: Annotated[list[str] | None, Query()] = None,
    tags_match_mode: TagsMatch | None = None,
    owners: Annotated[list[str] | None, Query()] = None,
    last_dag_run_state: DagRunState | None = None,
) -> DAGCollectionResponse:
    where = DagFilter(
        paused=paused,
        dag_id_pattern=dag_id_pattern,
        display_name_pattern=dag_display_name_pattern,
        exclude_stale=exclude_stale,
        tags=tags or (),
        tags_match_mode=tags_match_mode or "any",
        owners=owners or (),
        last_run_state=last_dag_run_state,
    )
    models, total = list_dags(session, page, where)
    broken = files_with_import_errors(session, {model.fileloc for model in models})
    dags = [dag_response(m, dag_view(m), m.fileloc in broken) for m in models]
    return DAGCollectionResponse(dags=dags, total_entries=total)


def _response(session: Session, model: DagModel) -> DAGResponse:
    broken = files_with_import_errors(session, [model.fileloc])
    return dag_response(model, dag_view(model), model.fileloc in broken)


@router.get("/{dag_id}")
def get_dag(dag_id: str, _: CanRead, session: DbSession) -> DAGResponse:
    return _response(session, get_dag_model(session, dag_id))


@router.get("/{dag_id}/details")
def get_dag_details(dag_id: str, _: CanRead, session: DbSession) -> DAGDetailsResponse:
    model = get_dag_model(session, dag_id)
    broken = files_with_import_errors(session, [model.fileloc])
    runs = count_runs_by_state(session, dag_id)
    active = runs.get(DagRunState.RUNNING, 0) + runs.get(DagRunState.QUEUED, 0)
    return dag_details(model, dag_view(model), model.fileloc in broken, active)


@router.patch("/{dag_id}")
def patch_dag(
    dag_id: str,
    body: DAGPatchBody,
    who: ActingRunner,
    session: DbSession,
    update_mask: Annotated[list[str] | None, Query()] = None,
) -> DAGResponse:
    model = get_dag_model(session, dag_id)
    if update_mask is None or "is_paused" in update_mask:
        set_paused(session, dag_id, body.is_paused)
        extra = {"is_paused": body.is_paused}
        record_event(session, who, "patch_dag", About(dag_id=dag_id), extra)
        session.refresh(model)
    return _response(session, model)
