"""A fail_fast DAG: one task fails while another sleeps (its pid written first)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tradewind import dag, task


@task
def sleepy(params=None) -> None:
    Path(params["pid_file"]).write_text(str(os.getpid()))
    time.sleep(300)


@task
def bad(params=None) -> None:
    while not Path(params["pid_file"]).exists():
        time.sleep(0.1)
    raise RuntimeError("fails at once")


@task
def after() -> None:
    pass


@dag(dag_id="fail_fast_run", fail_fast=True)
def fail_fast_run(pid_file: str = ""):
    sleepy() >> after()
    bad()


fail_fast_run()
