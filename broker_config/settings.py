"""Celery settings for long data tasks, each with the reason it is set.

Measured here (FIELD-NOTES.md): together these cost under 10% on noop tasks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from broker_config.names import DEFAULT_QUEUE, filesystem_folders

#: Longer than the longest task: on Redis an unacked message older than this is delivered again.
VISIBILITY_TIMEOUT_SECONDS = 86400


def celery_settings(
    broker_url: str, broker_folder: Path, sent_events: bool = True
) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "broker_url": broker_url,  # Redis in production; the embedded filesystem:// by default
        # Acknowledge after the supervisor is done, so a worker lost mid-task gives the
        # message back instead of losing it.
        "task_acks_late": True,
        # ...and give it back when a prefork pool process dies (OOM, SIGKILL; on the threads
        # pool the supervisors are the worker itself, and a worker lost leaves its messages
        # unacknowledged on the broker): the supervisor's
        # compare-and-set and the delivery count in SQL bound what a redelivery can do.
        "task_reject_on_worker_lost": True,
        # One message at a time per slot: a long task never sits on messages
        # another idle worker could run.
        "worker_prefetch_multiplier": 1,
        # A broker outage must not cost a running try (DESIGN.md §7 "Outages"): True would
        # SIGTERM every running task on connection loss. Kept running, the try records its end
        # in SQL; its message, unacknowledgeable on the lost channel, stays in Redis's unacked
        # hash and any copy delivered later is a duplicate the claim drops.
        "worker_cancel_long_running_tasks_on_connection_loss": False,
        # A worker started before its broker (compose, honcho) waits for it instead of exiting.
        "broker_connection_retry_on_startup": True,
        # ...and one whose broker went away waits for it as long as it takes (Celery's 100
        # attempts are under two minutes at the worker's 1 s between attempts): its running
        # tries go on meanwhile (worker/celery_app.py).
        "broker_connection_max_retries": None,
        # JSON only: a worker never unpickles what a message carries.
        "task_serializer": "json",
        "accept_content": ["json"],  # anything else is refused before it is decoded
        "result_serializer": "json",  # no pickle on the way back either
        # Results live in the SQL store (XComs); Celery keeps none.
        "result_backend": None,
        "task_ignore_result": True,  # so no task writes a result anywhere
        # Task events on, so Flower shows the fleet.
        "worker_send_task_events": True,
        # The producer's side too: Flower shows queued tries (TRADEWIND_TASK_SENT_EVENTS).
        "task_send_sent_event": sent_events,
        "task_default_queue": DEFAULT_QUEUE,  # queue names come from broker_config.names only
        "task_create_missing_queues": True,  # a task's own `queue=` needs no declaration
        # Keep Tradewind's own log format: Celery must not take over the root logger.
        "worker_hijack_root_logger": False,
        # Per transport: the embedded broker's folders, or Redis's visibility timeout.
        "broker_transport_options": _transport_options(broker_url, broker_folder),
    }
    return settings


def _transport_options(broker_url: str, broker_folder: Path) -> dict[str, Any]:
    if broker_url.startswith("filesystem://"):
        # The embedded broker; polling every 20 ms keeps a hop short without spinning.
        return {**filesystem_folders(broker_folder), "polling_interval": 0.02}
    if broker_url.startswith(("redis://", "rediss://")):
        return {"visibility_timeout": VISIBILITY_TIMEOUT_SECONDS}
    return {}
