"""Python task processes forked by a lean fork server, not by the Celery pool process.

A fork copies the page tables of the process that forks, and every page either side writes
afterwards is copied too. Forked from a Celery pool process (celery, kombu, SQLAlchemy, psycopg:
~95 MB), that was most of a noop try's machine time: the fork, the pool process's copy-on-write
faults while it supervised, and the task process's own teardown. So each pool process starts one
fork server (``worker/fork_server_main.py``): a fresh interpreter that imports only what a task
process runs (the authoring API, the runner, the DAG files it is asked for) and forks the task
processes on request (docs/decisions/tasks-fork-from-a-lean-server.md).

The supervisor keeps everything else: it makes the task's comms socket and pipes and sends their
far ends with the request, signals the task's own process group as before, and learns its exit
code from the server, which alone can reap it. The server dies with its pool process, and a task
process with its server (``PR_SET_PDEATHSIG``); a server found gone is started again.
"""

from __future__ import annotations

import itertools
import logging
import os
import select
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from functools import partial

from tradewind.dag import DAG
from tradewind.task import Task
from worker import protocol as p
from worker.iterable import run_iterable_task
from worker.mapping import is_iterable
from worker.process import COMMS_FD_ENV, TaskProcess, fork_python_task, reap_finished
from worker.runner import run_python_task

log = logging.getLogger(__name__)

SERVER_COMMAND = (sys.executable, "-m", "worker.fork_server_main")
#: The pool process's pid, so the server can tell it died before ``PR_SET_PDEATHSIG`` was set.
PARENT_PID_ENV = "TRADEWIND_FORK_SERVER_PARENT"
MAX_PACKET_BYTES = 1 << 16
#: An exited task process is reaped and reported at once; past this, it is taken as killed.
_REPORT_TIMEOUT_SECONDS = 5.0


class ForkServerError(RuntimeError):
    """The fork server could not start the task process (the message says why)."""


class ForkServerGone(ForkServerError):
    """The fork server exited: it is started again for the next try."""


def task_body(dag: DAG, task: Task) -> Callable[[socket.socket], int]:
    """What a Python task process runs; an iterable task runs all its items in it."""
    body = run_iterable_task if is_iterable(task) else run_python_task
    return lambda comms: body(comms, dag, task)


class ForkServer:
    """One pool process's fork server: its process and the channel to it."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {**os.environ, COMMS_FD_ENV: str(theirs.fileno()), PARENT_PID_ENV: str(os.getpid())}
        # A session of its own: a Ctrl-C or honcho's SIGTERM to the worker's group must not
        # reach it (it would take the running task with it); it goes when its pool process does.
        self._process = subprocess.Popen(
            SERVER_COMMAND, pass_fds=[theirs.fileno()], env=env, start_new_session=True
        )
        theirs.close()
        self._control = ours
        self._ids = itertools.count(1)
        self._exits: dict[int, int] = {}
        self.gone = False

    def start(self, fileloc: str, dag_id: str, task_id: str) -> TaskProcess:
        """Have the server fork the task process of ``task_id``; raises ForkServerError."""
        request = p.StartTaskProcess(
            id=next(self._ids), fileloc=fileloc, dag_id=dag_id, task_id=task_id
        )
        parent_end, child_end = socket.socketpair()
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        try:
            fds = [child_end.fileno(), out_write, err_write]
            socket.send_fds(self._control, [request.model_dump_json().encode()], fds)
            reply = self._reply_to(request.id)
        except OSError as error:
            reply = self._went(f"the fork server is gone: {error}")
        finally:
            child_end.close()
            os.close(out_write)
            os.close(err_write)
        if not isinstance(reply, p.TaskProcessResult):
            parent_end.close()
            os.close(out_read)
            os.close(err_read)
            raise (ForkServerGone if self.gone else ForkServerError)(reply.error)
        report = partial(self._exit_code, request.id)
        return TaskProcess(reply.pid, parent_end, out_read, err_read, exit_report=report)

    @property
    def pid(self) -> int:
        return self._process.pid

    def close(self) -> None:
        """Close the channel: the server kills what is left of its task processes and exits."""
        self.gone = True
        self._control.close()
        try:
            self._process.wait(_REPORT_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def _reply_to(self, request_id: int) -> p.TaskProcessResult | p.ErrorResponse:
        while not self.gone:
            message = self._receive()
            if isinstance(message, p.TaskProcessExited):
                self._exits[message.id] = message.exit_code
            elif message is not None and message.id == request_id:
                return message
        return self._went("the fork server exited")

    def _exit_code(self, request_id: int, wait: bool) -> int | None:
        """The reported exit code of the task process started by ``request_id``, if known."""
        timeout = _REPORT_TIMEOUT_SECONDS if wait else 0.0
        while request_id not in self._exits and not self.gone:
            if not select.select([self._control], [], [], timeout)[0]:
                break
            message = self._receive()
            if isinstance(message, p.TaskProcessExited):
                self._exits[message.id] = message.exit_code
        if request_id in self._exits:
            return self._exits.pop(request_id)
        if self.gone or wait:
            # Its server is gone, so it was killed with it; or it exited and was never reported.
            return -signal.SIGKILL
        return None

    def _receive(self) -> p.TaskProcessResult | p.TaskProcessExited | p.ErrorResponse | None:
        try:
            packet = self._control.recv(MAX_PACKET_BYTES)
        except OSError:
            packet = b""
        if not packet:
            self._went("the fork server exited")
            return None
        return p.FROM_FORK_SERVER.validate_json(packet)

    def _went(self, why: str) -> p.ErrorResponse:
        if not self.gone:
            self.gone = True
            self._control.close()
            log.warning("%s (exit code %s); starting another", why, self._process.poll())
        return p.ErrorResponse(error=why)


_server: ForkServer | None = None
_enabled = False


def use_fork_server() -> None:
    """From now on, this process's Python task processes come from a fork server (started now,
    so its imports overlap the worker's start)."""
    global _enabled, _server
    _enabled = True
    _server = ForkServer()


def stop_fork_server() -> None:
    """Back to forking task processes here; the fork server, if one runs, exits."""
    global _enabled, _server
    _enabled = False
    server, _server = _server, None
    if server is not None:
        server.close()


def current_fork_server() -> ForkServer | None:
    return _server


def start_python_task(fileloc: str, dag: DAG, task: Task) -> TaskProcess:
    """Start the task process of ``task``: from the fork server if this process uses one."""
    if not _enabled:
        return fork_python_task(task_body(dag, task))
    reap_finished()
    global _server
    for _attempt in range(2):
        if _server is None or _server.gone:
            _server = ForkServer()
        try:
            return _server.start(fileloc, dag.dag_id, task.task_id)
        except ForkServerGone:
            continue  # started again once: a server killed between two tries is no failure
    raise ForkServerError("the fork server exited twice in a row: see the worker's log")
