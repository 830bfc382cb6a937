"""``/api/v2/backfills``: list, create (or dry-run), pause, resume and cancel backfills.

Creating one goes through ``state.engine.backfills.create_backfill``, as ``tradewind dags backfill``
does; viewers read, ``user`` creates and changes.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, status

from api.audit import ActingRunner
from api.deps import CanRead, CanRun, DbSession
from api.models.backfills import (
    BackfillCollectionResponse,
    BackfillPostBody,
    BackfillResponse,
    DryRunBackfillCollectionResponse,
    DryRunBackfillResponse,
    backfill_response,
)
from api.paging import IdPath, Paging
from api.structure import check_conf
from state.engine import (
    BackfillRequest,
    BackfillView,
    cancel_backfill,
    create_backfill,
    get_backfill,
    get_dag_model,
    list_backfills,
    plan_backfill,
    set_paused,
)
from state.records import About, Actor, record_event

router = APIRouter(prefix="/backfills", tags=["Backfill"])


def _checked(session: DbSession, body: BackfillPostBody) -> BackfillRequest:
    """The request of ``body``, once Tradewind can do it and its conf fits the DAG's params."""
    unsupported = body.unsupported()
    if unsupported is not None:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, unsupported)
    check_conf(get_dag_model(session, body.dag_id), body.dag_run_conf or {})
    return body.request()


@router.get("")
def get_backfills(
    _: CanRead, session: DbSession, page: Paging, dag_id: str | None = None
) -> BackfillCollectionResponse:
    views, total = list_backfills(session, page, dag_id)
    return BackfillCollectionResponse(
        backfills=[backfill_response(v) for v in views], total_entries=total
    )


@router.post("")
def post_backfill(
    body: BackfillPostBody, who: ActingRunner, session: DbSession
) -> BackfillResponse:
    done = create_backfill(session, _checked(session, body), who.user)
    extra = {"backfill_id": done.backfill_id, "runs": len(done.created)}
    record_event(session, who, "create_backfill", About(dag_id=body.dag_id), extra)
    return backfill_response(get_backfill(session, done.backfill_id))


def _recorded(session: DbSession, who: Actor, event: str, view: BackfillView) -> BackfillResponse:
    backfill = view.backfill
    record_event(session, who, event, About(dag_id=backfill.dag_id), {"backfill_id": backfill.id})
    return backfill_response(view)


@router.post("/dry_run")
def post_backfill_dry_run(
    body: BackfillPostBody, _: CanRun, session: DbSession
) -> DryRunBackfillCollectionResponse:
    """The runs a backfill would create (one per interval without a run), creating none."""
    plan = plan_backfill(session, _checked(session, body))
    runs = [DryRunBackfillResponse(logical_date=end) for _start, end in plan.intervals]
    return DryRunBackfillCollectionResponse(backfills=runs, total_entries=len(runs))


@router.get("/{backfill_id}")
def get_backfill_route(backfill_id: IdPath, _: CanRead, session: DbSession) -> BackfillResponse:
    return backfill_response(get_backfill(session, backfill_id))


@router.put("/{backfill_id}/pause")
def pause_backfill(backfill_id: IdPath, who: ActingRunner, session: DbSession) -> BackfillResponse:
    return _recorded(session, who, "pause_backfill", set_paused(session, backfill_id, True))


@router.put("/{backfill_id}/unpause")
def unpause_backfill(
    backfill_id: IdPath, who: ActingRunner, session: DbSession
) -> BackfillResponse:
    return _recorded(session, who, "unpause_backfill", set_paused(session, backfill_id, False))


@router.put("/{backfill_id}/cancel")
def cancel_backfill_route(
    backfill_id: IdPath, who: ActingRunner, session: DbSession
) -> BackfillResponse:
    return _recorded(session, who, "cancel_backfill", cancel_backfill(session, backfill_id))
