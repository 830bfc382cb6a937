"""Starting the task process: fork for a Python task, exec for a runtime task.

The task gets its own process group, so stopping it (timeout, lost try) reaches the children it
started and nothing else; its stdout and stderr are pipes the supervisor reads into the log.

What a task process gets, and what it leaves (DESIGN.md §7, docs/security.md):
- its environment without the settings that reach the store, the broker or the API's keys
  (``task_environment``): the task asks its supervisor for what it needs, and needs none of them;
- its whole session ends with its try, a ``setsid`` grandchild too. A Python task process is the
  subreaper of everything it starts, and its fork server the subreaper of what an exited task
  process leaves (``worker/fork_server/main.py`` kills those); a runtime task or helper, exec'd
  here, carries a marker of its try in its environment, which everything it starts inherits, and
  every process still carrying it is killed when the try ends (``end_session``).
"""

from __future__ import annotations

import _signal
import contextlib
import ctypes
import gc
import io
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn

from worker.slots import PerSlot

if TYPE_CHECKING:
    from worker.fork_server.warm import WarmProcess

#: Environment variable telling a runtime task which inherited fd is its comms socket.
COMMS_FD_ENV = "TRADEWIND_COMMS_FD"
#: Environment variable marking every process of one exec'd try (``end_session``).
SESSION_ENV = "TRADEWIND_TASK_SESSION"

#: Settings a task process never sees: they reach the store, the broker or the API's keys, and
#: a task asks its supervisor for what it needs instead. Any ``TRADEWIND_*`` name holding one of
#: ``_SECRET_WORDS`` is left out too (a key's file, a key of a later release).
HIDDEN_SETTINGS = frozenset(
    {
        "TRADEWIND_DATABASE_URL",
        "TRADEWIND_BROKER_URL",
        "TRADEWIND_REMOTE_LOGS_URL",
        "TRADEWIND_API_SECRET_KEY",
        "TRADEWIND_FERNET_KEY",
    }
)
_SECRET_WORDS = ("SECRET", "FERNET", "PASSWORD")
#: A hidden value this long or longer is looked for in the other variables (the store's URL
#: under another name); a shorter one would match by chance.
_HIDDEN_VALUE_MIN_CHARS = 8


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
    #: An exec'd process's session marker (``SESSION_ENV``): what it started carries it too.
    session: str | None = None

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


def comms_pair() -> tuple[socket.socket, socket.socket]:
    """A try's comms socket: the supervisor's end, then the task's, both blocking.

    Whatever ``socket.getdefaulttimeout()`` says at this instant: kombu sets a default timeout for
    a moment while Celery closes its connections (a warm shutdown), and a pair made then would be
    non-blocking at the OS level, so the task's first blocking read would fail with EAGAIN.
    """
    near, far = socket.socketpair()
    near.setblocking(True)
    far.setblocking(True)
    return near, far


def fork_python_task(body: Callable[[socket.socket], int]) -> TaskProcess:
    """Fork a child that runs ``body(comms)`` and exits with its code, never returning here."""
    reap_finished()
    parent_end, child_end = comms_pair()
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
    with its parent, the subreaper of what it starts, no hidden setting in its environment,
    default signal handlers, and stdout/stderr wrappers for fds 1 and 2."""
    os.setpgid(0, 0)
    die_with_parent()
    become_subreaper()
    for name in [name for name in os.environ if is_hidden(name)]:
        del os.environ[name]
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


PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    """Make this process the parent of its orphaned descendants (a daemon's double fork, the
    child of a ``setsid`` process that exited): they stay in its tree, where they are found."""
    if PRCTL is not None:
        PRCTL(PR_SET_CHILD_SUBREAPER, 1)


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
    """Start ``command`` with the comms socket inherited, its fd number in the environment, and
    the marker of its session (``end_session``)."""
    reap_finished()
    parent_end, child_end = comms_pair()
    session = secrets.token_hex(16)
    full_env = {
        **task_environment(),
        **(env or {}),
        COMMS_FD_ENV: str(child_end.fileno()),
        SESSION_ENV: session,
    }
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
        popen.pid, parent_end, popen.stdout.fileno(), popen.stderr.fileno(), popen, session=session
    )
    _EXECUTED.get_or_make(list).append(process)
    return process


def is_hidden(name: str) -> bool:
    """Whether the variable ``name`` is kept from task processes (``HIDDEN_SETTINGS``)."""
    if name in HIDDEN_SETTINGS:
        return True
    return name.startswith("TRADEWIND_") and any(word in name for word in _SECRET_WORDS)


def task_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` (this process's) without what a task process must not see: the hidden
    settings, and any variable holding one of their values (the store's URL by another name)."""
    environ = os.environ if environ is None else environ
    hidden = [v for k, v in environ.items() if is_hidden(k) and len(v) >= _HIDDEN_VALUE_MIN_CHARS]
    return {
        name: value
        for name, value in environ.items()
        if not is_hidden(name) and not any(secret in value for secret in hidden)
    }


#: The runtime task and helper processes each slot started and has not closed yet: its children,
#: not a fork server's, so a cold shutdown kills them itself (``kill_executed``).
_EXECUTED: PerSlot[list[TaskProcess]] = PerSlot()


def kill_executed() -> None:
    """SIGKILL every slot's runtime task and helper processes, and what they started."""
    for processes in _EXECUTED.values():
        for process in list(processes):
            process.signal_group(signal.SIGKILL)
            end_session(process)


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
    """Close the supervisor's ends of the socket and pipes; an exec'd process's try is over,
    and so is its session (``end_session``)."""
    process.comms.close()
    if process.popen is not None:
        end_session(process)
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


def end_session(process: TaskProcess) -> None:
    """SIGKILL every process carrying the session marker of the exec'd ``process``: itself and
    what it started, in its group or not (``setsid``), orphaned or not.

    Each round kills what is found; a process forked meanwhile carries the marker too, and the
    next round finds it. A process that cleared its environment before an exec escapes: that
    is the one way out (docs/security.md).
    """
    if process.session is None:
        return
    needle = f"\0{SESSION_ENV}={process.session}\0".encode()
    for _round in range(_SESSION_KILL_ROUNDS):
        marked = [pid for pid in _all_pids() if needle in b"\0" + _environ_of(pid)]
        if not marked:
            return
        for pid in marked:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


_SESSION_KILL_ROUNDS = 5


def _all_pids() -> list[int]:
    return [int(entry.name) for entry in os.scandir("/proc") if entry.name.isdigit()]


def _environ_of(pid: int) -> bytes:
    """The environment ``pid`` was exec'd with (and keeps across forks); b"" if unreadable."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return environ.read()
    except OSError:
        return b""


def children_of(pid: int) -> list[int]:
    """The children of ``pid`` now (none if it is gone)."""
    found: list[int] = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for thread in threads:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{thread}/children") as kids:
            found += map(int, kids.read().split())
    return found


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and every process under it, whatever their group or session."""
    tree, todo = [pid], [pid]
    while todo:
        children = children_of(todo.pop())
        tree += children
        todo += children
    for member in tree:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(member, signal.SIGKILL)
