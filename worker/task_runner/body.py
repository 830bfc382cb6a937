"""What a forked Python task process runs, plain or iterable: its body, given its comms socket.

The supervisor forks it (``worker/process.py``, tests only) or a fork server's spare runs it
(``worker/fork_server/main.py``); either way the body returns the task process's exit code.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

from tradewind.dag import DAG
from tradewind.task import Task
from worker import wire as p
from worker.task_runner.iterable import run_iterable_task
from worker.task_runner.mapping import is_iterable
from worker.task_runner.runner import run_python_task


def task_body(
    dag: DAG, task: Task, details: p.TaskDetails | None = None
) -> Callable[[socket.socket], int]:
    """What a Python task process runs; an iterable task runs all its items in it.

    ``details``: the handshake's reply, given ahead (the task process then does not ask).
    """
    body = run_iterable_task if is_iterable(task) else run_python_task
    return lambda comms: body(comms, dag, task, details)
