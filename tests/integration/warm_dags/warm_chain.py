"""Six tasks in a chain, each returning the pid of the task process it ran in."""

from __future__ import annotations

import os

from tradewind import DAG, task

SEEN: list[int] = []  # module state: a warm task process keeps it


@task
def where() -> list[int]:
    SEEN.append(os.getpid())
    return [os.getpid(), len(SEEN)]


with DAG("warm_chain"):
    previous = None
    for number in range(6):
        current = where.override(task_id=f"t{number}")()
        if previous is not None:
            previous >> current
        previous = current
