"""A task that kills the worker process supervising it, every try."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from tradewind import dag, get_current_context, task


def supervisor_pid() -> int:
    """The Celery pool process: the parent of the fork server that forked this task process."""
    pid = os.getppid()
    while "celery" not in Path(f"/proc/{pid}/cmdline").read_text():
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    return pid


@task(retries=5, retry_delay=0)
def kill_my_worker() -> None:
    ti = get_current_context()["ti"]
    with open(os.environ["SCHEDULER_TEST_RECORD"], "a") as record:
        record.write(f"{ti.try_number}\n")
    os.kill(supervisor_pid(), signal.SIGKILL)
    time.sleep(5)


@dag(dag_id="worker_killer")
def worker_killer():
    kill_my_worker()


worker_killer()
