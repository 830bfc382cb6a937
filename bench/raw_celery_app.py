"""The baseline: a raw Celery noop task with Tradewind's broker settings, counting in Redis."""

from __future__ import annotations

import os
from pathlib import Path

import redis
from celery import Celery

from broker_config.settings import celery_settings

BROKER = os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/14")
COUNTER = "bench:raw_celery:done"

app = Celery("raw_bench", set_as_current=False)
app.conf.update(celery_settings(BROKER, Path("/tmp/unused")))
_redis = redis.Redis.from_url(BROKER)


@app.task(name="bench.noop")
def noop() -> None:
    _redis.incr(COUNTER)
