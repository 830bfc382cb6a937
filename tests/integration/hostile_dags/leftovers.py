"""Tasks that leave a process of another session behind (``setsid``), each ending otherwise.

Each notes its leftover's pid in ``$TRADEWIND_HOME/leftovers/<task_id>``; the test checks every
one is killed once its try has ended (issue 26).
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import time
from pathlib import Path

from tradewind import dag, task


def _note(task_id: str, pid: int) -> None:
    folder = Path(os.environ["TRADEWIND_HOME"]) / "leftovers"
    folder.mkdir(exist_ok=True)
    (folder / f"{task_id}.tmp").write_text(str(pid))
    (folder / f"{task_id}.tmp").rename(folder / task_id)


def _setsid_sleep() -> int:
    return subprocess.Popen(["setsid", "sleep", "600"]).pid


@task
def succeeds() -> None:
    _note("succeeds", _setsid_sleep())


@task
def fails() -> None:
    child = os.fork()
    if child == 0:  # a forked child in a session of its own, never exec'd
        os.setsid()
        time.sleep(600)
        os._exit(0)
    _note("fails", child)
    raise RuntimeError("failed on purpose, leaving its forked child behind")


@task(execution_timeout=dt.timedelta(seconds=2))
def times_out() -> None:
    _note("times_out", _setsid_sleep())
    time.sleep(600)


@task
def is_stopped() -> None:
    _note("is_stopped", _setsid_sleep())
    time.sleep(600)


@task.runtime(
    command=[
        "sh",
        "-c",
        'mkdir -p "$TRADEWIND_HOME/leftovers"; setsid sleep 600 & '
        'echo $! > "$TRADEWIND_HOME/leftovers/runtime.tmp"; '
        'mv "$TRADEWIND_HOME/leftovers/runtime.tmp" "$TRADEWIND_HOME/leftovers/runtime"',
    ]
)
def runtime() -> None:
    """``sh`` says nothing to its supervisor and exits, its setsid child left running."""


@dag(dag_id="leftovers")
def leftovers():
    succeeds()
    fails()
    times_out()
    is_stopped()
    runtime()


leftovers()
