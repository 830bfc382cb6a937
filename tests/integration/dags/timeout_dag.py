"""A task stuck past its execution_timeout, with a child process of its own; the retry succeeds."""

from __future__ import annotations

import datetime as dt
import subprocess
import time
from pathlib import Path

from tradewind import dag, task


@task(execution_timeout=dt.timedelta(seconds=2), retries=1, retry_delay=0)
def stuck(params=None, ti=None) -> str:
    if ti.try_number == 1:
        child = subprocess.Popen(["sleep", "300"])
        Path(params["pid_file"]).write_text(str(child.pid))
        time.sleep(300)
    return "recovered"


@dag(dag_id="timeout_dag")
def timeout_dag():
    stuck()


timeout_dag()
