"""Starting the task process: fork for a Python task, exec for a runtime task.

The task gets its own process group, so stopping it (timeout, lost try) reaches the children it
started and nothing else; its stdout and stderr are pipes the supervisor reads into the log.
"""

from __future__ import annotations

import _signal
import contextlib
import ctypes
import gc
import io
import logging
import os
import signal
import socket
import subprocess
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn

from worker.slots import PerSlot

if TYPE_CHECKING:
    from worker.fork_server.warm import WarmProcess

#: Environment variable telling a runtime task which inherited fd is its comms socket.
COMMS_FD_ENV = "TRADEWIND_COMMS_FD"


@dataclass
class TaskProcess:
    """The supervisor's handles on a running task process."""

    pid: int
    comms: socket.socket
    stdout: int
    stderr: int
    popen: subprocess.Popen[bytes] | None = None
    exit_code: int | None = None
    #: For a task process forked by a fork server: its exit code as the server reports it
    #: (``wait``: the process is known to have exited, wait for the report).
    exit_report: Callable[[bool], int | None] | None = None
    #: A task process that may wait for another try after this one (``worker/fork_server/warm.py``).
    warm: WarmProcess | None = None

    def poll(self, wait: bool = False) -> int | None:
        """The exit code once the process is gone (negative: killed by that signal)."""
        if self.exit_code is None:
            if self.popen is not None:
                self.exit_code = self.popen.poll()
            elif self.exit_report is not None:
                self.exit_code = self.exit_report(wait)
            else:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    self.exit_code = os.waitstatus_to_exitcode(status)
        return self.exit_code

    def signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)


def fork_python_task(body: Callable[[socket.socket], int]) -> TaskProcess:
    """Fork a child that runs ``body(comms)`` and exits with its code, never returning here."""
    reap_finished()
    parent_end, child_end = socket.socketpair()
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()

    def close_parent_ends() -> None:
        parent_end.close()
        os.close(out_read)
        os.close(err_read)

    pid = fork_child(body, child_end, out_write, err_write, close_parent_ends)
    child_end.close()
    os.close(out_write)
    os.close(err_write)
    return TaskProcess(pid, parent_end, out_read, err_read)


def fork_child(
    body: Callable[[socket.socket], int],
    comms: socket.socket,
    out_fd: int,
    err_fd: int,
    in_child: Callable[[], None],
) -> int:
    """Fork the task process on these channels; ``in_child`` first drops what it must not hold."""
    # Frozen objects are never scanned by the child's collector, so it does not touch (and
    # copy) the parent's pages; the parent unfreezes at once so its own garbage is still freed.
    gc.freeze()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, measured by the tests' outcomes
        code = 70
        try:
            in_child()
            prepare_task_process()
            attach_task_channels(out_fd, err_fd)
            code = body(comms)
        except BaseException:
            traceback.print_exc()
        finally:
            exit_task_process(code, comms.fileno(), out_fd, err_fd)
    gc.unfreeze()
    return pid


def prepare_task_process() -> None:
    """What a task process sets up before it knows its task: its own process group, death
    with its parent, default signal handlers, and stdout/stderr wrappers for fds 1 and 2."""
    os.setpgid(0, 0)
    die_with_parent()
    _fresh_stdio()
    # The parent's pooled connections are left alone: the task never uses SQL, and os._exit
    # below runs no finalizer that could close them (disposing them costs ~7 ms a fork).
    for signum in RESET_SIGNALS:
        set_signal_handler(signum, _signal.SIG_DFL)


def attach_task_channels(out_fd: int, err_fd: int) -> None:
    """Make the try's pipes the task process's stdout and stderr."""
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)


def exit_task_process(code: int, *fds: int) -> NoReturn:
    """Flush, close every channel to the supervisor, and exit with ``code``."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    # Every channel to the supervisor closed before the exit: a task that said how it ended
    # is then done, and the supervisor records it while the kernel tears this process down
    # (~4 ms of a noop try: the exit frees the copy of the parent's pages it wrote to).
    for fd in (*fds, 1, 2):
        with contextlib.suppress(OSError):
            os.close(fd)
    # os._exit: no parent-owned atexit hook or finalizer may run in the child.
    os._exit(code)


RESET_SIGNALS = (signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1, signal.SIGCHLD)


def set_signal_handler(signum: int, handler: Callable[[int, FrameType | None], Any] | int) -> None:
    """``signal.signal`` without its enum conversions (so ``_signal.SIG_DFL``, not the enum).

    For a Python handler (Celery's, the pool's) that conversion raises and catches a ValueError:
    the five calls a task process makes cost ~0.2 ms of copy-on-write faults in the child.
    """
    _signal.signal(signum, handler)


def _resolve_prctl() -> Callable[[int, int], int] | None:
    # Resolved once per process, at import: doing it in each forked child (ctypes.CDLL) cost
    # ~0.35 ms of copy-on-write faults per task process.
    if sys.platform != "linux":
        return None
    prctl: Callable[[int, int], int] = ctypes.CDLL(None, use_errno=True).prctl
    return prctl


PR_SET_PDEATHSIG = 1
PRCTL = _resolve_prctl()


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this task process if its supervisor dies.

    A supervisor killed with SIGKILL (OOM, a lost worker) cannot stop its task; left alone, the
    orphan would go on running beside the retry that the zombie rule starts.
    """
    if PRCTL is None:
        return
    PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() == 1:  # the supervisor died before prctl took effect
        os._exit(70)


def _fresh_stdio() -> None:
    """Line-buffered stdout/stderr on the pipes, and logging to stderr only.

    The Celery worker replaced sys.stdout with its own proxy and configured handlers
    that write to the worker's log; the task's output must reach its try's log instead.
    """
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), line_buffering=True)
    sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), line_buffering=True)
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_TASK_LOG_FORMAT)
    root.addHandler(handler)
    # setLevel clears the cache of every logger, touching each (~0.4 ms of copy-on-write faults
    # in the child); a worker run with --loglevel INFO already has the level, and valid caches.
    if root.level != logging.INFO:
        root.setLevel(logging.INFO)


# Built once in the parent: its format is checked with a regex, ~0.1 ms in each child.
_TASK_LOG_FORMAT = logging.Formatter("%(levelname)s %(name)s: %(message)s")


def exec_runtime_task(command: Sequence[str], env: dict[str, str] | None = None) -> TaskProcess:
    """Start ``command`` with the comms socket inherited, its fd number in the environment."""
    reap_finished()
    parent_end, child_end = socket.socketpair()
    full_env = {**os.environ, **(env or {}), COMMS_FD_ENV: str(child_end.fileno())}
    popen = subprocess.Popen(
        list(command),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=[child_end.fileno()],
        env=full_env,
        start_new_session=True,
    )
    child_end.close()
    assert popen.stdout is not None and popen.stderr is not None
    process = TaskProcess(
        popen.pid, parent_end, popen.stdout.fileno(), popen.stderr.fileno(), popen
    )
    _EXECUTED.get_or_make(list).append(process)
    return process


#: The runtime task and helper processes each slot started and has not closed yet: its children,
#: not a fork server's, so a cold shutdown kills them itself (``kill_executed``).
_EXECUTED: PerSlot[list[TaskProcess]] = PerSlot()


def kill_executed() -> None:
    """SIGKILL the process groups of every slot's runtime task and helper processes."""
    for processes in _EXECUTED.values():
        for process in list(processes):
            process.signal_group(signal.SIGKILL)


#: Task processes whose end was recorded before they could be reaped (see the supervisor), per
#: slot: a fork server's task process is polled through that slot's server (``worker/slots.py``).
_UNREAPED: PerSlot[list[TaskProcess]] = PerSlot()


def unreaped() -> list[TaskProcess]:
    """This slot's task processes left exiting, not reaped yet."""
    return _UNREAPED.get_or_make(list)


def reap_later(process: TaskProcess) -> None:
    """Reap ``process`` now if it is gone, else at the next fork (it is exiting).

    Kept here until then: a runtime task's ``Popen`` collected while its process is still
    there would be a process nobody reaps.
    """
    if process.poll() is None:
        unreaped().append(process)
    else:
        process.signal_group(signal.SIGKILL)  # what it left running in its group


def reap_finished() -> None:
    """Reap the task processes left exiting by this slot's earlier tries; at most one each."""
    left = unreaped()
    for process in list(left):
        try:
            gone = process.poll() is not None
        except ChildProcessError:
            gone = True
        if gone:
            left.remove(process)
            process.signal_group(signal.SIGKILL)  # what it left running in its group


def close_process_handles(process: TaskProcess) -> None:
    """Close the supervisor's ends of the socket and pipes."""
    process.comms.close()
    if process.popen is not None:
        executed = _EXECUTED.get()
        if executed is not None and process in executed:
            executed.remove(process)
        for stream in (process.popen.stdout, process.popen.stderr):
            if stream is not None:
                stream.close()
        return
    for fd in (process.stdout, process.stderr):
        with contextlib.suppress(OSError):
            os.close(fd)
