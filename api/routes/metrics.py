"""``GET /metrics``: the fleet's metrics for Prometheus; no anonymous scrape.

A scrape authenticates with ``Authorization: Bearer <TRADEWIND_METRICS_TOKEN>`` (a long-lived
secret for the scraper, compared in constant time), or as any user of the API (a token from
``/auth/token``, or a signed-in browser): viewers and up may read it, as they read the rest.
With ``TRADEWIND_METRICS_ENABLED=false`` the path is 404.
"""

from __future__ import annotations

import hmac
import logging
from typing import Annotated

import redis
from fastapi import APIRouter, Depends, HTTPException, Request, Response, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from api.deps import Context, current_user, require
from api.metrics import CONTENT_TYPE, scrape
from broker_config.dead_letters import NoDeadLetters, count_dead_letters
from state.records import Role

log = logging.getLogger("tradewind.api.metrics")
router = APIRouter(tags=["Monitor"])
_bearer = HTTPBearer(auto_error=False, description="TRADEWIND_METRICS_TOKEN, or a user's token")
#: How long a scrape waits for the broker's count of dead letters.
BROKER_TIMEOUT_SECONDS = 1.0


def scraper(
    request: Request,
    context: Context,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """Let the scrape token through; anyone else must be a user who may read."""
    if not context.settings.metrics_enabled:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND, "metrics are off (TRADEWIND_METRICS_ENABLED)"
        )
    token = context.settings.metrics_token
    if token is not None and credentials is not None and _same(credentials.credentials, token):
        return
    require(Role.VIEWER)(current_user(request, context, credentials))


def _same(sent: str, token: str) -> bool:
    return hmac.compare_digest(sent.encode(), token.encode())


@router.get("/metrics", response_class=Response, include_in_schema=False)  # not Airflow's API
def get_metrics(context: Context, _: Annotated[None, Depends(scraper)]) -> Response:
    settings = context.settings
    body = scrape(context.url, settings.metrics_flush_seconds, _dead_letters(context))
    return Response(body, media_type=CONTENT_TYPE)


def _dead_letters(context: Context) -> int | None:
    """The broker's dead letters now; None (the series left out) if it cannot say."""
    settings = context.settings
    try:
        return count_dead_letters(settings.broker, settings.broker_folder, BROKER_TIMEOUT_SECONDS)
    except NoDeadLetters:
        return None
    except redis.RedisError as error:
        log.warning("metrics: the broker's dead letters are unknown: %s", error)
        return None
