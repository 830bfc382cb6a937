"""An asset with an AssetWatcher over a Redis list, and a DAG scheduled on it: a run per message.

The list's Redis is the test fleet's own database (``TRADEWIND_TEST_WATCH_REDIS``).
"""

from __future__ import annotations

import os

from airflow.providers.common.messaging.triggers.msg_queue import MessageQueueTrigger
from airflow.sdk import DAG, Asset, AssetWatcher, task

_REDIS = os.environ.get("TRADEWIND_TEST_WATCH_REDIS", "redis://127.0.0.1:6379/0")
_HOST_DB = _REDIS.removeprefix("redis://")
orders = Asset(
    "orders",
    watchers=[
        AssetWatcher("orders_queue", MessageQueueTrigger(queue=f"redis+list://{_HOST_DB}/orders"))
    ],
)

with DAG("on_orders", schedule=[orders]):

    @task
    def handle() -> str:
        return "handled"

    handle()
