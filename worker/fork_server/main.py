"""The fork server: forks a supervisor's Python task processes (``worker/fork_server/client.py``).

Started by the supervisor as ``python -m worker.fork_server.main``, with its end of a
SOCK_SEQPACKET pair in ``TRADEWIND_COMMS_FD``. It imports nothing of Celery or SQLAlchemy, so
what it forks is small.

It keeps one spare task process forked ahead, set up as far as a task process can be before it
knows its task (own process group, death with its parent, signals, stdio), and hands the
supervisor the spare's end of a channel to it (``SpareReady``): the fork and that setup happen
while the supervisor is busy with the previous try, and starting a try is one send from the
supervisor to the spare (``StartTaskProcess``, with the task's comms socket and pipes), with no
round trip through this server. The supervisor then says ``SpareTaken``; the server loads that
DAG file, if it changed, so the next spares inherit it, and forks the next spare. The modules a
try imported on first use (a provider's hook) are imported here too before that fork
(``worker/fork_server/learned.py``). A spare that
finds its DAG file changed since its fork loads it itself. Once a taken task process is reaped
the server says ``TaskProcessExited`` with its exit code.

A spare taken to stay warm is said with ``next_spare`` false: no spare is forked behind it (it
would sit idle beside the warm process) until the supervisor sends ``ForkSpare``.

A spare started with ``then_wait`` (``TRADEWIND_TASK_PROCESS_REUSE``) may run several tries, each
sent to it by the supervisor on the spare's channel (``worker/task_runner/warm_loop.py``); the
server learns nothing of them, and reports its exit once, after its last.

It exits when the supervisor closes the channel or dies, and kills what is left of its task
processes then: they must not outlive the supervisor that records them.

It is the subreaper of its task processes' descendants (each task process is the subreaper of
its own while it runs): what a try left behind (a ``setsid`` grandchild, a daemon) becomes the
server's child when its task process exits, and the server kills it then, with everything under
it (``_end_leftovers``). Its children are so its spare, its task processes still running, and
nothing else for longer than a SIGCHLD takes.
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
from types import FrameType
from typing import NoReturn

from worker import wire as p
from worker.dags import preload
from worker.fork_server.client import PARENT_PID_ENV
from worker.fork_server.learned import LearnedImports
from worker.process import (
    COMMS_FD_ENV,
    PR_SET_PDEATHSIG,
    PRCTL,
    become_subreaper,
    children_of,
    exit_task_process,
    kill_tree,
    prepare_task_process,
)
from worker.task_runner.warm_loop import receive_start, run_try, serve_tries


class ForkServerLoop:
    """Keeps a spare handed to the supervisor; reports its children's exits. One selector."""

    def __init__(self, control: socket.socket) -> None:
        self._control = control
        self._spare: int | None = None  # the pid of the spare the supervisor holds
        # False while the supervisor keeps its last spare warm and has asked for no other.
        self._spare_wanted = True
        self._taken: set[int] = set()  # task processes running a try
        # Spares reaped before the supervisor said it took them: a fast task, or a spare that
        # died waiting (which the supervisor never names). Oldest first, a few kept.
        self._early_exits: dict[int, int] = {}
        self._wake_read, self._wake_write = os.pipe()
        # What its task processes imported on first use, to import before the next fork.
        self._learned = LearnedImports()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)
        # SIGCHLD wakes the selector through this pipe (its Python handler does nothing).
        signal.set_wakeup_fd(self._wake_write)
        signal.signal(signal.SIGCHLD, _ignore)

    def run(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._control, selectors.EVENT_READ)
            selector.register(self._wake_read, selectors.EVENT_READ)
            selector.register(self._learned.read_fd, selectors.EVENT_READ)
            serving = True
            while serving:
                if self._spare is None and self._spare_wanted:
                    serving = self._hand_over_spare()
                for key, _ in selector.select():
                    if key.fileobj == self._wake_read:
                        os.read(self._wake_read, 4096)
                        serving = serving and self._report_exits()
                    elif key.fileobj == self._learned.read_fd:
                        self._learned.import_reported()
                    else:
                        serving = serving and self._on_message()
        # Its task processes, what their tries left, and the spare: nothing outlives it.
        for pid in children_of(os.getpid()):
            kill_tree(pid)

    def _on_message(self) -> bool:
        try:
            packet, _fds = p.receive_packet(self._control)
        except ConnectionError:
            return False
        if not packet:
            return False  # the supervisor closed the channel, or died
        taken = p.TO_FORK_SERVER.validate_json(packet)
        if isinstance(taken, p.ForkSpare):
            self._spare_wanted = True
            return True
        if taken.pid == self._spare:
            self._spare = None  # the next one is forked before the loop waits again, if wanted
            self._spare_wanted = taken.next_spare
            self._taken.add(taken.pid)
        elif taken.pid in self._early_exits:
            code = self._early_exits.pop(taken.pid)
            return self._send(p.TaskProcessExited(pid=taken.pid, exit_code=code))
        preload(taken.fileloc)  # so the spares forked from now on have it loaded
        return True

    def _hand_over_spare(self) -> bool:
        """Fork a spare and send its channel to the supervisor; False once that is gone."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            pid = self._fork_spare(theirs, ours)
        except OSError as error:  # fork refused (no memory, too many processes)
            ours.close()
            theirs.close()
            return self._send(p.ErrorResponse(error=f"could not fork a task process: {error}"))
        theirs.close()
        self._spare = pid
        try:
            socket.send_fds(self._control, [p.packet(p.SpareReady(pid=pid))], [ours.fileno()])
        except OSError:
            return False
        finally:
            ours.close()  # the supervisor holds it now: the spare's one way in
        return True

    def _fork_spare(self, channel: socket.socket, supervisor_end: socket.socket) -> int:
        self._learned.before_fork()
        # Frozen objects are never scanned by the child's collector, so it does not touch (and
        # copy) this process's pages; unfrozen at once so the server's own garbage is freed.
        gc.freeze()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child, measured by the tests' outcomes
            # The supervisor's end of its own channel closed here: else a spare the supervisor
            # lets go never sees its channel close, and waits for ever.
            supervisor_end.close()
            _spare_main(channel, self._in_child)
        gc.unfreeze()
        # Its own process group from now on, whichever of the two calls runs first: the pool
        # process may signal the group as soon as it has the pid.
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)
        return pid

    def _in_child(self) -> None:
        signal.set_wakeup_fd(-1)
        self._learned.in_child()
        for fd in (self._control.fileno(), self._wake_read, self._wake_write):
            os.close(fd)

    def _report_exits(self) -> bool:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return True
            if pid == 0:
                self._end_leftovers()
                return True
            code = os.waitstatus_to_exitcode(status)
            if pid in self._taken:
                self._taken.discard(pid)
                if not self._send(p.TaskProcessExited(pid=pid, exit_code=code)):
                    return False
            elif pid == self._spare:
                # Taken and done before the supervisor said so, or dead unused: either way
                # the supervisor needs another spare, and may yet ask for this exit.
                self._spare = None
                self._early_exits[pid] = code
                while len(self._early_exits) > _EARLY_EXITS_KEPT:
                    del self._early_exits[next(iter(self._early_exits))]

    def _end_leftovers(self) -> None:
        """Kill what exited task processes left: every child that is neither the spare nor a
        task process still running, with all under it. It was its task process's child, or
        its descendant's, orphaned to this server when that process exited, so its try is over
        (a running try's orphans are its own task process's)."""
        keep = self._taken | {self._spare}
        for child in children_of(os.getpid()):
            if child not in keep:
                kill_tree(child)

    def _send(self, message: p.SpareReady | p.TaskProcessExited | p.ErrorResponse) -> bool:
        try:
            self._control.send(p.packet(message))
        except OSError:  # the supervisor is gone
            return False
        return True


_EARLY_EXITS_KEPT = 16


def _spare_main(channel: socket.socket, in_child: Callable[[], None]) -> NoReturn:
    """A spare task process: set up, wait for the task, run it (and, warm, the tries after it:
    ``worker/task_runner/warm_loop.py``), exit (never returns)."""
    code, fds = 70, list[int]()
    try:
        in_child()
        prepare_task_process()
        request, fds = receive_start(channel)
        if request is None:  # the supervisor let it go unused, or is gone
            os._exit(0)
        if request.then_wait:
            code, fds = serve_tries(channel, request, fds)
        else:
            channel.close()
            code = run_try(request, fds)
    except BaseException:
        traceback.print_exc()
    finally:
        exit_task_process(code, *fds)


def _ignore(signum: int, frame: FrameType | None) -> None:
    """SIGCHLD's handler: the wake-up pipe does the work."""


def _die_with(parent: int) -> None:
    """SIGKILL this server when the worker process that started it dies, even by SIGKILL.

    Linux sends it when the *thread* that started the server ends: on the threads pool that is
    the worker's main thread (the servers started with the worker) or a pool thread (a server
    started again), each of which lives as long as the worker does.
    """
    if PRCTL is not None:
        PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before prctl took effect
        sys.exit(0)


def main() -> None:
    control = socket.socket(fileno=int(os.environ.pop(COMMS_FD_ENV)))
    _die_with(int(os.environ.pop(PARENT_PID_ENV)))
    become_subreaper()
    # What the server imported is shared by every task process it forks: the children's
    # collector never scans (and so never copies) it.
    gc.freeze()
    ForkServerLoop(control).run()


if __name__ == "__main__":
    main()
