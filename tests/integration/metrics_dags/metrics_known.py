"""A run of known figures for /metrics: three successes (a chain of three), one failure.

``hold`` takes a slot of ``metrics_pool`` and keeps it until the file ``params["release"]``
exists, so that a scrape can see the slot held.
"""

from __future__ import annotations

import time
from pathlib import Path

from tradewind import dag, task


@task
def first() -> int:
    return 1


@task
def second(x: int) -> int:
    return x + 1


@task(pool="metrics_pool")
def hold(x: int, params=None) -> int:
    while not Path(params["release"]).exists():
        time.sleep(0.05)
    return x


@task(retries=0)
def breaks() -> None:
    raise RuntimeError("as planned")


@dag(dag_id="metrics_known")
def metrics_known():
    hold(second(first()))
    breaks()


metrics_known()
