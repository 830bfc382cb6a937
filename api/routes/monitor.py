"""``/api/v2/version`` and ``/api/v2/monitor/health``: open to anyone, for probes.

Health asks the store for one row; the scheduler has no heartbeat row in Tradewind (any number
of schedulers run, none registers), so its status is reported as unknown (null).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from fastapi import APIRouter, Response, status
from pydantic import BaseModel

from api.deps import Context
from state.core import store_answers

router = APIRouter(tags=["Monitor", "Version"])


class VersionInfo(BaseModel):
    version: str
    git_version: str | None = None


class BaseInfoResponse(BaseModel):
    status: str | None


class SchedulerInfoResponse(BaseModel):
    status: str | None = None
    latest_scheduler_heartbeat: str | None = None


class TriggererInfoResponse(BaseModel):
    status: str | None = None
    latest_triggerer_heartbeat: str | None = None


class HealthInfoResponse(BaseModel):
    metadatabase: BaseInfoResponse
    scheduler: SchedulerInfoResponse
    triggerer: TriggererInfoResponse
    dag_processor: None = None


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
    database = "healthy" if store_answers(context.url) else "unhealthy"
    if database == "unhealthy":
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    return HealthInfoResponse(
        metadatabase=BaseInfoResponse(status=database),
        scheduler=SchedulerInfoResponse(),
        triggerer=TriggererInfoResponse(),
    )
