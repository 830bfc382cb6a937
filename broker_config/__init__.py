"""What the scheduler (producer) and the worker (consumer) share about the broker.

Settings, queue names, the task-instance message schema and publishing one message. This
package imports no other part of Tradewind: both sides import it, never each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker_config.message import (
    InvalidMessage,
    QueuedTry,
    TaskInstanceMessage,
    message_of,
    parse_message,
)
from broker_config.names import DEFAULT_QUEUE, EXECUTE_TASK_NAME

if TYPE_CHECKING:
    from broker_config.app import make_celery_app
    from broker_config.publish import publish_many

__all__ = [
    "DEFAULT_QUEUE",
    "EXECUTE_TASK_NAME",
    "InvalidMessage",
    "QueuedTry",
    "TaskInstanceMessage",
    "make_celery_app",
    "message_of",
    "parse_message",
    "publish_many",
]


def __getattr__(name: str) -> Any:
    # Celery, kombu and redis come with these two only: a third of a second that a command
    # which only builds messages (``tradewind dags test``) need not pay.
    if name == "make_celery_app":
        from broker_config.app import make_celery_app

        return make_celery_app
    if name == "publish_many":
        from broker_config.publish import publish_many

        return publish_many
    raise AttributeError(f"module 'broker_config' has no attribute {name!r}")
