"""One slow task that records each try it starts in a marker file."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tradewind import dag, task


@task(retries=2, retry_delay=0)
def slow(params=None, ti=None) -> str:
    with Path(params["marker"]).open("a") as marker:
        marker.write(f"{ti.try_number} {os.getpid()}\n")
    if ti.try_number == 1:
        time.sleep(float(params.get("sleep", 30)))
    return "done"


@dag(dag_id="slow_dag")
def slow_dag():
    slow()


slow_dag()
