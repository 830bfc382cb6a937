"""Tasks of two DAGs waiting together for the one slot of pool "solo", each with its weight."""

from __future__ import annotations

import time

from tradewind import DAG, task


@task(pool="solo")
def hold() -> None:
    time.sleep(0.3)  # long enough that every waiting try is waiting when a slot frees


with DAG("weighed"):
    for weight in (3, 10, 1, 7, 5):
        hold.override(task_id=f"w{weight}", priority_weight=weight)()

with DAG("weighed_other"):
    hold.override(task_id="w8", priority_weight=8)()
