"""Twenty tasks in five layers (1, 9, 1, 8, 1); each records its (run, task, try) in a file."""

from __future__ import annotations

import os

from tradewind import dag, get_current_context, task


@task
def step() -> None:
    ti = get_current_context()["ti"]
    line = f"{ti.run_id} {ti.task_id} {ti.try_number}\n"
    # One write of a short line to an O_APPEND file: lines from many processes never interleave.
    fd = os.open(os.environ["SCHEDULER_TEST_RECORD"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


@dag(dag_id="fan20", max_active_tasks=16, max_active_runs=16)
def fan20():
    first = step.override(task_id="start")()
    middle = step.override(task_id="middle")()
    last = step.override(task_id="end")()
    for n in range(9):
        first >> step.override(task_id=f"a{n}")() >> middle
    for n in range(8):
        middle >> step.override(task_id=f"b{n}")() >> last


fan20()
