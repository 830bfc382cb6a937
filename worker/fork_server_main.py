"""The fork server: forks a pool process's Python task processes (``worker/fork_server.py``).

Started by the pool process as ``python -m worker.fork_server_main``, with its end of a
SOCK_SEQPACKET pair in ``TRADEWIND_COMMS_FD``. It imports nothing of Celery or SQLAlchemy, so
what it forks is small.

It keeps one spare task process forked ahead, set up as far as a task process can be before it
knows its task (own process group, death with its parent, signals, stdio): the fork and that
setup happen while the pool process is busy with the previous try, not while a try waits. Each
``StartTaskProcess`` brings the task's comms socket and pipes; the server checks that the task
exists (loading the DAG file as the pool process does), passes the request and its descriptors
on to the spare, answers ``TaskProcessResult`` with the spare's pid, then forks the next spare.
A spare forked before a DAG file was (re)loaded is replaced rather than left to load it again.
Once a task process is reaped the server says ``TaskProcessExited`` with its exit code.

It exits when the pool process closes the channel or dies, and kills what is left of its task
processes then: they must not outlive the supervisor that records them.
"""

from __future__ import annotations

import contextlib
import gc
import os
import selectors
import signal
import socket
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any, NoReturn

from tradewind.exceptions import TaskNotFound
from worker import protocol as p
from worker.dags import dag_cache_entries, find_task
from worker.fork_server import MAX_PACKET_BYTES, PARENT_PID_ENV, task_body
from worker.process import (
    _PR_SET_PDEATHSIG,
    _PRCTL,
    COMMS_FD_ENV,
    attach_task_channels,
    exit_task_process,
    prepare_task_process,
)


@dataclass
class Spare:
    """A task process waiting for its task on ``channel``."""

    pid: int
    channel: socket.socket
    #: The DAG files it inherited, as loaded then (entries compared by identity).
    dags: dict[str, Any]
    gone: bool = False


class ForkServerLoop:
    """Waits for start requests and for its children's exits, one selector for both."""

    def __init__(self, control: socket.socket) -> None:
        self._control = control
        self._started: dict[int, int] = {}  # pid -> the id of the request that started it
        self._spare: Spare | None = None
        self._request_fds: list[int] = []  # a spare forked meanwhile must not hold them
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)
        # SIGCHLD wakes the selector through this pipe (its Python handler does nothing).
        signal.set_wakeup_fd(self._wake_write)
        signal.signal(signal.SIGCHLD, _ignore)

    def run(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._control, selectors.EVENT_READ)
            selector.register(self._wake_read, selectors.EVENT_READ)
            serving = True
            while serving:
                if self._spare is None:
                    self._spare = self._fork_spare()
                for key, _ in selector.select():
                    if key.fileobj == self._wake_read:
                        os.read(self._wake_read, 4096)
                        serving = self._report_exits()
                    else:
                        serving = self._on_request()
        for pid in self._started:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)

    def _on_request(self) -> bool:
        try:
            packet, fds, _flags, _address = socket.recv_fds(self._control, MAX_PACKET_BYTES, 3)
        except ConnectionError:
            return False
        if not packet:
            return False  # the pool process closed the channel, or died
        self._request_fds = fds
        try:
            if len(fds) != 3:
                raise p.ProtocolError(f"a start request brought {len(fds)} descriptors, not 3")
            return self._send(self._start(_START.model_validate_json(packet), packet))
        finally:
            self._request_fds = []
            for fd in fds:
                os.close(fd)

    def _start(
        self, request: p.StartTaskProcess, packet: bytes
    ) -> p.TaskProcessResult | p.ErrorResponse:
        try:
            find_task(request.fileloc, request.dag_id, request.task_id)
            spare = self._take_spare(request.fileloc)
            try:
                socket.send_fds(spare.channel, [packet], self._request_fds)
            except OSError:  # it died waiting (killed by hand, say): one more, forked now
                spare.channel.close()
                spare = self._fork_spare()
                socket.send_fds(spare.channel, [packet], self._request_fds)
        except TaskNotFound as error:
            return p.ErrorResponse(id=request.id, error=str(error))
        except OSError as error:  # fork refused (no memory, too many processes)
            return p.ErrorResponse(id=request.id, error=f"could not fork a task process: {error}")
        spare.channel.close()
        self._started[spare.pid] = request.id
        return p.TaskProcessResult(id=request.id, pid=spare.pid)

    def _take_spare(self, fileloc: str) -> Spare:
        """The spare, if it still waits and has this DAG file as loaded now; else a new one."""
        spare, self._spare = self._spare, None
        if spare is not None:
            if not spare.gone and spare.dags.get(fileloc) is dag_cache_entries().get(fileloc):
                return spare
            spare.channel.close()  # it exits on its own
        return self._fork_spare()

    def _fork_spare(self) -> Spare:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        dags = dict(dag_cache_entries())
        # Frozen objects are never scanned by the child's collector, so it does not touch (and
        # copy) this process's pages; unfrozen at once so the server's own garbage is freed.
        gc.freeze()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child, measured by the tests' outcomes
            ours.close()
            _spare_main(theirs, self._in_child)
        gc.unfreeze()
        theirs.close()
        return Spare(pid, ours, dags)

    def _in_child(self) -> None:
        signal.set_wakeup_fd(-1)
        for fd in (self._control.fileno(), self._wake_read, self._wake_write, *self._request_fds):
            os.close(fd)

    def _report_exits(self) -> bool:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return True
            if pid == 0:
                return True
            if self._spare is not None and self._spare.pid == pid:
                self._spare.gone = True
            request_id = self._started.pop(pid, None)
            if request_id is not None:
                code = os.waitstatus_to_exitcode(status)
                if not self._send(p.TaskProcessExited(id=request_id, exit_code=code)):
                    return False

    def _send(self, message: p.TaskProcessResult | p.TaskProcessExited | p.ErrorResponse) -> bool:
        try:
            self._control.send(message.model_dump_json().encode())
        except OSError:  # the pool process is gone
            return False
        return True


_START = p.StartTaskProcess


def _spare_main(channel: socket.socket, in_child: Callable[[], None]) -> NoReturn:
    """A spare task process: set up, wait for the task, run it, exit (never returns)."""
    code, fds = 70, list[int]()
    try:
        in_child()
        prepare_task_process()
        packet, fds, _flags, _address = socket.recv_fds(channel, MAX_PACKET_BYTES, 3)
        channel.close()
        if not packet:  # the server let it go unused
            os._exit(0)
        request = _START.model_validate_json(packet)
        attach_task_channels(fds[1], fds[2])
        dag, task = find_task(request.fileloc, request.dag_id, request.task_id)
        code = task_body(dag, task)(socket.socket(fileno=fds[0]))
    except BaseException:
        traceback.print_exc()
    finally:
        exit_task_process(code, *fds)


def _ignore(signum: int, frame: FrameType | None) -> None:
    """SIGCHLD's handler: the wake-up pipe does the work."""


def _die_with(parent: int) -> None:
    """SIGKILL this server when the pool process that started it dies, even by SIGKILL."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before prctl took effect
        sys.exit(0)


def main() -> None:
    control = socket.socket(fileno=int(os.environ.pop(COMMS_FD_ENV)))
    _die_with(int(os.environ.pop(PARENT_PID_ENV)))
    # What the server imported is shared by every task process it forks: the children's
    # collector never scans (and so never copies) it.
    gc.freeze()
    ForkServerLoop(control).run()


if __name__ == "__main__":
    main()
