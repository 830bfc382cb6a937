"""A task process's tries, one or several (``TRADEWIND_TASK_PROCESS_REUSE``, DESIGN.md §7).

A spare started with ``then_wait`` runs its try, then checks that the try left the process as
the next try must find it: no child process left (it is the subreaper of what its tries start,
so an orphaned grandchild counts too), no thread left running, the same working directory and
environment as before its first try. If so it says ``TaskProcessIdle`` on its channel, closes the
try's socket and pipes (the supervisor records the try then), and waits on the channel for the
next ``StartTaskProcess``; if not it says ``TaskProcessExiting`` with the reason, and exits as a
fresh process does. The supervisor's side, and what only it can judge (a timeout, a stop), is
``worker/fork_server/warm.py``.

What a reused process keeps between tries is what Python keeps: every imported module and its
globals, the DAG files it loaded (each loaded again when its file changed, ``worker/dags.py``),
caches, logging handlers a task added. What each try gets afresh: its socket, its stdout and
stderr pipes (so its own log), its ``TaskDetails``, its context, its SIGTERM/SIGUSR2 handling and
the other signals back to their defaults.
"""

from __future__ import annotations

import _signal
import contextlib
import os
import socket
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from worker import wire as p
from worker.dags import find_task
from worker.fork_server.learned import report_new_imports
from worker.process import (
    RESET_SIGNALS,
    attach_task_channels,
    set_signal_handler,
)
from worker.task_runner import runner
from worker.task_runner.body import task_body


def receive_start(channel: socket.socket) -> tuple[p.StartTaskProcess | None, list[int]]:
    """The next start and its three descriptors (None: the channel closed, the process exits)."""
    packet, fds = p.receive_packet(channel, max_fds=3)
    if not packet:
        return None, fds
    if len(fds) != 3:
        raise p.ProtocolError(f"a start brought {len(fds)} descriptors, not 3")
    return p.StartTaskProcess.model_validate_json(packet), fds


def run_try(request: p.StartTaskProcess, fds: list[int]) -> int:
    """Run the try ``request`` names on its socket and pipes ``fds``; its exit code."""
    attach_task_channels(fds[1], fds[2])
    # The DAG file as the server loaded it, or loaded again here if it changed since.
    dag, task = find_task(request.fileloc, request.dag_id, request.task_id)
    comms = socket.socket(fileno=fds[0])
    comms.setblocking(True)  # reads here block (``worker.process.comms_pair``)
    try:
        return task_body(dag, task, request.details)(comms)
    finally:
        # Before the channels close: the supervisor records the try only then.
        report_new_imports()
        comms.detach()  # closed by number with the pipes: never twice, never another's fd


def serve_tries(
    channel: socket.socket, request: p.StartTaskProcess, fds: list[int]
) -> tuple[int, list[int]]:
    """Run tries from ``channel`` while each leaves the process fit for the next; returns the
    exit code of the last and the descriptors still open.

    Every task process is the subreaper of what its tries start (``prepare_task_process``): an
    orphaned grandchild (a daemon's double fork) is its child, so a try that left one behind is
    seen to have."""
    before = Surroundings.now()
    while True:
        code = run_try(request, fds)
        if not request.then_wait:
            return code, fds
        unfit = before.unfit_because(code)
        if unfit is not None:
            _say(channel, p.TaskProcessExiting(pid=os.getpid(), reason=unfit))
            return code, fds
        # Said before the try's channels close: the supervisor, seeing them close, finds it.
        if not _say(channel, p.TaskProcessIdle(pid=os.getpid())):
            return code, fds  # the supervisor let it go (it stopped the try): exit
        close_try_channels(fds)
        fds = []
        got, fds = receive_start(channel)
        if got is None:
            return 0, fds
        request = got
        if not request.then_wait:
            channel.close()  # its last try: the supervisor let the channel go
        _fresh_try_state()


def close_try_channels(fds: list[int]) -> None:
    """Close the try's socket and pipes, stdout and stderr going to /dev/null until the next.

    fds 1 and 2 are never left closed: a file the next try opens would get their number, and
    a stray print would write into it.
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    for fd in fds:
        os.close(fd)


@dataclass(frozen=True)
class Surroundings:
    """What a try must leave as it found it for its process to run another."""

    cwd: str
    environ: dict[str, str]

    @classmethod
    def now(cls) -> Surroundings:
        return cls(os.getcwd(), dict(os.environ))

    def unfit_because(self, code: int) -> str | None:
        """Why the process must not run another try after one that exited with ``code``."""
        if code not in (0, 1):
            return f"its try ended with exit code {code}"
        try:
            cwd: str | None = os.getcwd()
        except FileNotFoundError:
            cwd = None
        if cwd != self.cwd:
            return f"the try changed its working directory (to {cwd or 'a deleted folder'})"
        changed = _changed_names(self.environ, dict(os.environ))
        if changed:
            return f"the try changed its environment ({', '.join(changed[:5])})"
        children = live_children()
        if children:
            return f"the try left child processes running (pid {', '.join(map(str, children))})"
        threads = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
        if threads:
            return f"the try left threads running ({', '.join(threads)})"
        return None


def _changed_names(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The names of the variables added, removed or changed (never their values: secrets)."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def live_children() -> list[int]:
    """This process's children still running; those that already exited are reaped first."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
    children: list[int] = []
    for thread in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError):
            children += map(int, (thread / "children").read_text().split())
    return children


def _fresh_try_state() -> None:
    """What the next try must not inherit from this one's run."""
    runner._try_given_up = False  # set by a SIGUSR2; that try was stopped, but fail closed
    for signum in RESET_SIGNALS:
        set_signal_handler(signum, _signal.SIG_DFL)


def _say(channel: socket.socket, message: p.TaskProcessIdle | p.TaskProcessExiting) -> bool:
    """Send ``message`` to the supervisor; False if it closed the channel."""
    try:
        channel.send(message.model_dump_json().encode())
    except OSError:
        return False
    return True
