"""``/api/v2/dagSources``, ``/api/v2/dagStats`` and ``/api/v2/importErrors``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query

from api.deps import CanRead, DbSession
from api.models.resources import (
    DAGSourceResponse,
    DagStatsCollectionResponse,
    DagStatsResponse,
    DagStatsStateResponse,
    ImportErrorCollectionResponse,
    ImportErrorResponse,
    import_error_response,
)
from api.paging import Paging
from state.core import MAX_PAGE_LIMIT, DagRunState, NotFound
from state.engine import get_dag_model
from state.views import get_import_error, list_import_errors, run_counts

router = APIRouter()


@router.get("/dagSources/{dag_id}", tags=["DagSource"])
def get_dag_source(dag_id: str, _: CanRead, session: DbSession) -> DAGSourceResponse:
    model = get_dag_model(session, dag_id)
    try:
        content: str | None = Path(model.fileloc).read_text(encoding="utf-8", errors="replace")
    except OSError:  # parsed on another host, or deleted since
        content = None
    return DAGSourceResponse(
        content=content, dag_id=dag_id, version_number=1, dag_display_name=dag_id
    )


@router.get("/dagStats", tags=["DagStats"])
def get_dag_stats(
    _: CanRead,
    session: DbSession,
    dag_ids: Annotated[list[str] | None, Query()] = None,
) -> DagStatsCollectionResponse:
    counts, total = run_counts(session, dag_ids, MAX_PAGE_LIMIT)
    dags = [
        DagStatsResponse(
            dag_id=dag_id,
            dag_display_name=dag_id,
            stats=[
                DagStatsStateResponse(state=state, count=by_state.get(state, 0))
                for state in DagRunState
            ],
        )
        for dag_id, by_state in counts.items()
    ]
    return DagStatsCollectionResponse(dags=dags, total_entries=total)


@router.get("/importErrors", tags=["Import Error"])
def get_import_errors(
    _: CanRead, session: DbSession, page: Paging, filename_pattern: str | None = None
) -> ImportErrorCollectionResponse:
    errors, total = list_import_errors(session, page, filename_pattern)
    return ImportErrorCollectionResponse(
        import_errors=[import_error_response(error) for error in errors], total_entries=total
    )


@router.get("/importErrors/{import_error_id}", tags=["Import Error"])
def get_import_error_by_id(
    import_error_id: int, _: CanRead, session: DbSession
) -> ImportErrorResponse:
    error = get_import_error(session, import_error_id)
    if error is None:
        raise NotFound(f"no import error with id {import_error_id}")
    return import_error_response(error)
