"""The Celery app (``celery -A worker worker``) and its one task: a message to the supervisor."""

from __future__ import annotations

import gc
import logging
from typing import Any

from celery import Celery, signals

from broker_config import (
    EXECUTE_TASK_NAME,
    InvalidMessage,
    make_celery_app,
    parse_message,
    publish_many,
)
from state.db import forget_engines_after_fork
from state.scheduling import Enqueue
from tradewind.settings import get_settings
from worker.execute import execute
from worker.fork_server import stop_fork_server, use_fork_server

log = logging.getLogger("tradewind.worker")


def create_app() -> Celery:
    settings = get_settings()
    app = make_celery_app(settings.broker, settings.broker_folder, main="worker")
    app.task(name=EXECUTE_TASK_NAME, bind=True, acks_late=True)(execute_task_instance)
    return app


def execute_task_instance(self: Any, *args: Any, message: Any = None, **unexpected: Any) -> str:
    """Validate the message, then supervise its try; a bad message is logged and dropped."""
    if args or unexpected:
        log.error(
            "dropped broker message: expected one keyword argument 'message', got %d positional "
            "and %s",
            len(args),
            sorted(unexpected) or "no other keywords",
        )
        return "dropped"
    try:
        parsed = parse_message(message)
    except InvalidMessage as error:
        log.error("dropped broker message: %s", error)
        return "dropped"
    app = self.app

    def publish(ready: list[Enqueue]) -> None:
        publish_many(app, ready)

    return execute(parsed, get_settings(), publish)


def _freeze_before_the_pool_forks(**_: Any) -> None:
    # What the worker imported (Celery, SQLAlchemy, psycopg: ~80 MB) is shared with the pool
    # processes it forks as long as nothing writes to it; the collector of a pool process scans
    # every tracked object, writing to each, and so copied most of it into each of them.
    # Frozen objects are never scanned.
    gc.collect()
    gc.freeze()


def _fresh_pool_process(**_: Any) -> None:
    # A pool process is forked from the worker: its pooled connections are the parent's.
    forget_engines_after_fork()
    use_fork_server()


def _pool_process_exits(**_: Any) -> None:
    stop_fork_server()


signals.worker_init.connect(_freeze_before_the_pool_forks)
signals.worker_process_init.connect(_fresh_pool_process)
signals.worker_process_shutdown.connect(_pool_process_exits)
