"""The Celery app both sides configure identically (the worker registers the task on it)."""

from __future__ import annotations

from pathlib import Path

from celery import Celery

from broker_config import filesystem, redis_transport
from broker_config.settings import celery_settings


def make_celery_app(
    broker_url: str, broker_folder: Path, main: str = "tradewind", sent_events: bool = True
) -> Celery:
    # Tradewind's transports for filesystem:// and redis:// URLs, installed with the first app
    # (not on import: a plain Celery app of the same process keeps kombu's own).
    filesystem.install()
    redis_transport.install()
    app = Celery(main, set_as_current=False)
    app.conf.update(celery_settings(broker_url, broker_folder, sent_events))
    return app
