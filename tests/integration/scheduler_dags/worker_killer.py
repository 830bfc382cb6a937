"""A task that kills the worker process supervising it, every try."""

from __future__ import annotations

import os
import signal
import time

from tradewind import dag, get_current_context, task


@task(retries=5, retry_delay=0)
def kill_my_worker() -> None:
    ti = get_current_context()["ti"]
    with open(os.environ["SCHEDULER_TEST_RECORD"], "a") as record:
        record.write(f"{ti.try_number}\n")
    os.kill(os.getppid(), signal.SIGKILL)  # the supervisor: the Celery pool process
    time.sleep(5)


@dag(dag_id="worker_killer")
def worker_killer():
    kill_my_worker()


worker_killer()
