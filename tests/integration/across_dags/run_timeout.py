"""A run timed out while its one task sleeps far longer: the task writes its pid first."""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

from tradewind import dag, task


@task
def sleepy(params=None) -> None:
    Path(params["pid_file"]).write_text(str(os.getpid()))
    time.sleep(300)


@dag(dag_id="run_timeout", dagrun_timeout=dt.timedelta(seconds=5))
def run_timeout(pid_file: str = ""):
    sleepy()


run_timeout()
