"""DAGs of the host scenarios; every body records what it did in one file all hosts share.

Each record is one JSON line appended with O_APPEND (whole, whatever the writers): the host
(``TWH_HOST``), the task instance, the try, the phase (``start``, ``tick`` every 0.1 s while a
body holds, ``end``), the wall time and the task process's pid. From them a test tells which
host ran which try, and whether two bodies of one task instance ever ran at the same time.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from tradewind import DAG, dag, task


def record(ti: Any, phase: str) -> None:
    line = {
        "host": os.environ.get("TWH_HOST", "?"),
        "ti": f"{ti.dag_id}/{ti.run_id}/{ti.task_id}/{ti.map_index}",
        "try": ti.try_number,
        "phase": phase,
        "t": time.time(),
        "pid": os.getpid(),
    }
    fd = os.open(os.environ["TWH_RECORDS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())
    finally:
        os.close(fd)


def hold_for(ti: Any, seconds: float) -> None:
    record(ti, "start")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
        record(ti, "tick")
    record(ti, "end")


@task(retries=2, retry_delay=0)
def hold(params: Any = None, ti: Any = None) -> str:
    """Holds ``first_try_seconds`` on its first try, ``seconds`` on the others."""
    hold_for(ti, float(params["first_try_seconds" if ti.try_number == 1 else "seconds"]))
    return "held"


@task(retries=3, retry_delay=0)
def step(params: Any = None, ti: Any = None) -> None:
    hold_for(ti, float(params["seconds"]))


@dag(dag_id="hosts_hold", params={"first_try_seconds": 60.0, "seconds": 1.0})
def hosts_hold() -> None:
    hold()


hosts_hold()

# Independent tasks: how work spreads over worker hosts.
with DAG("hosts_fan", params={"seconds": 0.3}, max_active_tasks=64):
    for number in range(12):
        step.override(task_id=f"f{number}")()

# A chain: each hop is one try's end handing its successor over, host to host.
with DAG("hosts_chain", params={"seconds": 0.0}):
    previous = None
    for number in range(15):
        current = step.override(task_id=f"c{number}")()
        if previous is not None:
            previous >> current
        previous = current


@task(retries=2, retry_delay=0)
def flaky(ti: Any = None) -> None:
    """Fails its first try: only a scheduler moves it on (``up_for_retry`` -> ``scheduled``)."""
    hold_for(ti, 0.2)
    if ti.try_number == 1:
        raise RuntimeError("the first try fails, on purpose")


with DAG("hosts_retry", max_active_tasks=64):
    for number in range(4):
        flaky.override(task_id=f"r{number}")()

# Wide: enough task instances that a scheduler's passes keep queueing for a while.
with DAG("hosts_wide", params={"seconds": 0.0}, max_active_tasks=400):
    for number in range(400):
        step.override(task_id=f"w{number}")()
