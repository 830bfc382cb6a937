"""What the scheduler (producer) and the worker (consumer) share about the broker.

Settings, queue names, the task-instance message schema and publishing one message. This
package imports no other part of Tradewind: both sides import it, never each other.
"""

from __future__ import annotations

from broker_config.app import make_celery_app
from broker_config.message import InvalidMessage, TaskInstanceMessage, parse_message
from broker_config.names import DEFAULT_QUEUE, EXECUTE_TASK_NAME
from broker_config.publish import QueuedTry, message_of, publish_many

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
