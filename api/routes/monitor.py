"""``/api/v2/version`` and ``/api/v2/monitor/health``: open to anyone, for probes.

Health reads the components' heartbeats as Airflow 3.3 does (state/records/jobs.py): each kind
from its most recent job, running ones first, ``healthy`` when that job runs and beat within
``TRADEWIND_JOB_HEALTH_THRESHOLD_SECONDS``, else ``unhealthy`` with its last heartbeat. A
scheduler that never registered is ``unhealthy`` (no heartbeat); a triggerer or DAG processor
that never ran has status null, as Airflow answers for a fleet without one. A store that does
not answer is ``metadatabase: unhealthy``, every other kind unknown, and the answer is 503.
"""

from __future__ import annotations

import datetime as dt
from importlib.metadata import PackageNotFoundError, version

from fastapi import APIRouter, Response, status
from pydantic import BaseModel

from api.deps import Context
from state.core import StoreError, session_scope
from state.records import HEALTHY, UNHEALTHY, JobKind, kinds_health

router = APIRouter(tags=["Monitor", "Version"])


class VersionInfo(BaseModel):
    version: str
    git_version: str | None = None


class BaseInfoResponse(BaseModel):
    status: str | None


# As Airflow's OpenAPI: every field required, each may be null.
class SchedulerInfoResponse(BaseModel):
    status: str | None
    latest_scheduler_heartbeat: str | None


class TriggererInfoResponse(BaseModel):
    status: str | None
    latest_triggerer_heartbeat: str | None


class DagProcessorInfoResponse(BaseModel):
    status: str | None
    latest_dag_processor_heartbeat: str | None


class HealthInfoResponse(BaseModel):
    metadatabase: BaseInfoResponse
    scheduler: SchedulerInfoResponse
    triggerer: TriggererInfoResponse
    dag_processor: DagProcessorInfoResponse | None = None


def version_text() -> str:
    try:
        return version("tradewind")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"


@router.get("/version")
def get_version() -> VersionInfo:
    return VersionInfo(version=version_text())


@router.get("/monitor/health")
def get_health(context: Context, response: Response) -> HealthInfoResponse:
    try:
        with session_scope(context.url) as session:
            kinds = kinds_health(session, context.settings.job_health_threshold)
    except StoreError:
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
        return HealthInfoResponse(
            metadatabase=BaseInfoResponse(status=UNHEALTHY),
            scheduler=SchedulerInfoResponse(status=None, latest_scheduler_heartbeat=None),
            triggerer=TriggererInfoResponse(status=None, latest_triggerer_heartbeat=None),
        )
    scheduler, triggerer = kinds[JobKind.SCHEDULER], kinds[JobKind.TRIGGERER]
    processor = kinds[JobKind.DAG_PROCESSOR]
    return HealthInfoResponse(
        metadatabase=BaseInfoResponse(status=HEALTHY),
        scheduler=SchedulerInfoResponse(
            status=scheduler.status or UNHEALTHY,
            latest_scheduler_heartbeat=_iso(scheduler.latest_heartbeat),
        ),
        triggerer=TriggererInfoResponse(
            status=triggerer.status, latest_triggerer_heartbeat=_iso(triggerer.latest_heartbeat)
        ),
        dag_processor=DagProcessorInfoResponse(
            status=processor.status,
            latest_dag_processor_heartbeat=_iso(processor.latest_heartbeat),
        ),
    )


def _iso(moment: dt.datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None
