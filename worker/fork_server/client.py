"""Python task processes forked by a lean fork server, not by the supervisor's process.

A fork copies the page tables of the process that forks, and every page either side writes
afterwards is copied too. Forked from a Celery pool process (celery, kombu, SQLAlchemy, psycopg:
~95 MB), that was most of a noop try's machine time: the fork, the pool process's copy-on-write
faults while it supervised, and the task process's own teardown. And on the threads pool the
supervisors' process runs several threads, and must not fork at all (a lock another thread held
at the fork stays held in the child). So each slot (``worker/slots.py``: a thread of the threads
pool, or a prefork pool process) has one fork server (``worker/fork_server/main.py``): a fresh
interpreter that imports only what a task process runs (the authoring API, the runner, the DAG
files it is asked for) and forks the task processes ahead of need
(docs/decisions/tasks-fork-from-a-lean-server.md).

The server hands over each spare task process's channel as soon as it has forked it, so starting a
try is one send, straight to the spare, while the server forks the next one. The supervisor keeps
everything else: it makes the task's comms socket and pipes and sends their far ends to the
spare, signals the task's own process group as before, and learns its exit
code from the server, which alone can reap it. The server dies with the worker process that
started it, and a task process with its server (``PR_SET_PDEATHSIG``); a server found gone is
started again.

One server per slot rather than one shared: the server's channel carries the spare it hands
over and the exit reports of its task processes, read by the supervisor that waits for them;
shared, every read would need a lock held across those waits, or a thread of its own to route
each report to its supervisor. Per slot, a supervisor waits on its own channel only, and a
spare is always ready for each slot (a server and its spare cost ~30 MB of PSS together, a
prefork pool process ~55 MB: docs/benchmarks.md).
"""

from __future__ import annotations

import logging
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import NoReturn

from tradewind.dag import DAG
from tradewind.task import Task
from worker import wire as p
from worker.fork_server.warm import WarmProcess, drop_all_idle, next_start, start_in, take_idle
from worker.process import (
    COMMS_FD_ENV,
    TaskProcess,
    comms_pair,
    fork_python_task,
    kill_tree,
    reap_finished,
    task_environment,
)
from worker.slots import PerSlot
from worker.task_runner.body import task_body

log = logging.getLogger(__name__)

SERVER_COMMAND = (sys.executable, "-P", "-m", "worker.fork_server.main")
#: The worker process's pid, so the server can tell it died before ``PR_SET_PDEATHSIG`` was set.
PARENT_PID_ENV = "TRADEWIND_FORK_SERVER_PARENT"
#: An exited task process is reaped and reported at once; past this, it is taken as killed.
_REPORT_TIMEOUT_SECONDS = 5.0
#: How long a send to the server may block: it reads its channel all the time, so a send that
#: cannot go out means a server stuck, taken as gone.
_SEND_TIMEOUT_SECONDS = 10.0
#: TRADEWIND_TASK_START_TIMEOUT_SECONDS's default: how long a try waits for its task process.
DEFAULT_START_TIMEOUT_SECONDS = 120.0


class ForkServerError(RuntimeError):
    """The fork server could not start the task process (the message says why)."""


class ForkServerGone(ForkServerError):
    """The fork server exited: it is started again for the next try."""


class HandOverTimeout(ForkServerError):
    """No task process was handed over in time: the stuck server was killed."""


class ForkServer:
    """One slot's fork server: its process, the channel to it, the spare it handed over."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # Without the store's and the broker's URLs: what it forks runs the tasks' code.
        env = {
            **task_environment(),
            COMMS_FD_ENV: str(theirs.fileno()),
            PARENT_PID_ENV: str(os.getpid()),
        }
        # A session of its own: a Ctrl-C or honcho's SIGTERM to the worker's group must not
        # reach it (it would take the running task with it); it goes when its worker does.
        self._process = subprocess.Popen(
            SERVER_COMMAND, pass_fds=[theirs.fileno()], env=env, start_new_session=True
        )
        theirs.close()
        self._control = ours
        # Reads wait in select(), never here; a send that cannot go out is a stuck server.
        self._control.settimeout(_SEND_TIMEOUT_SECONDS)
        self._spare: tuple[int, socket.socket] | None = None  # (pid, its channel)
        self._exits: dict[int, int] = {}  # pid -> exit code, reported and not yet asked for
        self._error: str | None = None
        self.gone = False

    def start(
        self,
        fileloc: str,
        dag_id: str,
        task_id: str,
        details: p.TaskDetails | None = None,
        then_wait: bool = False,
        timeout_seconds: float = DEFAULT_START_TIMEOUT_SECONDS,
    ) -> TaskProcess:
        """Start the task on the spare; raises ForkServerError. Nothing here waits on the
        server unless it has no spare ready yet (the first try, or a spare that died), and
        then for ``timeout_seconds`` at most (``HandOverTimeout``).

        ``then_wait``: the spare's channel is kept, for its next try
        (``worker/fork_server/warm.py``).
        """
        start = p.StartTaskProcess(
            fileloc=fileloc, dag_id=dag_id, task_id=task_id, details=details, then_wait=then_wait
        )
        try:
            packet = p.start_packet(start)
        except p.ProtocolError as error:
            raise ForkServerError(str(error)) from None
        channels = TryChannels()
        try:
            pid, spare = self._hand_over(packet, channels.far_ends, then_wait, timeout_seconds)
        except ForkServerError:
            channels.close_near_ends()
            raise
        finally:
            channels.close_far_ends()
        self._send(p.SpareTaken(pid=pid, fileloc=fileloc, next_spare=not then_wait))
        report = partial(self._exit_code, pid)
        warm = None if spare is None else WarmProcess(pid, spare, report)
        return channels.process(pid, report, warm)

    @property
    def pid(self) -> int:
        return self._process.pid

    def kill(self) -> None:
        """SIGKILL the server and every process under it: its task processes, and what their
        tries left running (a ``setsid`` grandchild, which ``PR_SET_PDEATHSIG`` does not reach)."""
        kill_tree(self._process.pid)

    def close(self) -> None:
        """Close the channel: the server kills what is left of its task processes and exits."""
        self._drop_spare()
        self.gone = True
        self._control.close()
        try:
            self._process.wait(_REPORT_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def _hand_over(
        self, packet: bytes, fds: list[int], keep: bool, timeout_seconds: float
    ) -> tuple[int, socket.socket | None]:
        """Send the start ``packet`` to the spare (a newer one first, if the server sent one);
        its pid, and its channel if ``keep``. HandOverTimeout past ``timeout_seconds``."""
        deadline = time.monotonic() + timeout_seconds
        for _attempt in range(3):
            self._read_messages(wait=False)
            if self._spare is None:
                # The last one was kept warm (no next was forked), or it is on its way: asking
                # again is harmless.
                self._send(p.ForkSpare())
            while self._spare is None:
                self._raise_if_failed()
                left = deadline - time.monotonic()
                if left <= 0:
                    self._stuck(timeout_seconds)
                self._read_messages(wait=True, timeout=left)
            pid, channel = self._spare
            self._spare = None
            try:
                # A packet within MAX_PACKET_BYTES never fills an idle spare's channel: the
                # timeout only bounds a send to a spare that went wrong.
                channel.settimeout(max(0.1, deadline - time.monotonic()))
                socket.send_fds(channel, [packet], fds)
                channel.settimeout(None)
            except OSError:
                channel.close()
                continue  # it died waiting (killed by hand, say): the server forks another
            if keep:
                return pid, channel
            channel.close()
            return pid, None
        raise ForkServerError("the fork server's spare task processes keep dying")

    def _stuck(self, timeout_seconds: float) -> NoReturn:
        """No spare came in time: the server is stuck (stopped, or importing a DAG file that
        never ends), no use to the next try either. It is killed; the next try starts another."""
        self.kill()
        self._went("the fork server handed over no task process in time")
        raise HandOverTimeout(
            f"no task process was handed over within {timeout_seconds:g}s "
            "(TRADEWIND_TASK_START_TIMEOUT_SECONDS): the fork server did not answer, and was "
            "stopped"
        )

    def _raise_if_failed(self) -> None:
        if self.gone:
            raise ForkServerGone(self._error or "the fork server exited")
        if self._error is not None:
            error, self._error = self._error, None
            raise ForkServerError(error)

    def _exit_code(self, pid: int, wait: bool) -> int | None:
        """The reported exit code of the task process ``pid``, if known."""
        deadline = time.monotonic() + (_REPORT_TIMEOUT_SECONDS if wait else 0.0)
        while pid not in self._exits and not self.gone:
            if not self._read_messages(wait=True, timeout=max(0.0, deadline - time.monotonic())):
                break
        if pid in self._exits:
            return self._exits.pop(pid)
        if self.gone or wait:
            # Its server is gone, so it was killed with it; or it exited and was never reported.
            return -signal.SIGKILL
        return None

    def _read_messages(self, wait: bool, timeout: float | None = None) -> bool:
        """Take in what the server sent (waiting for one message if ``wait``); False if none."""
        got = False
        while not self.gone:
            if not select.select([self._control], [], [], timeout if wait and not got else 0)[0]:
                return got
            try:
                packet, fds = p.receive_packet(self._control, max_fds=1)
            except OSError:
                packet, fds = b"", []
            if not packet:
                self._went("the fork server exited")
                return got
            got = True
            message = p.FROM_FORK_SERVER.validate_json(packet)
            if isinstance(message, p.SpareReady) and fds:
                self._drop_spare()  # its process is gone: the server replaced it
                self._spare = (message.pid, socket.socket(fileno=fds.pop()))
            elif isinstance(message, p.TaskProcessExited):
                self._exits[message.pid] = message.exit_code
            elif isinstance(message, p.ErrorResponse):
                self._error = message.error
            for fd in fds:
                os.close(fd)
        return got

    def _drop_spare(self) -> None:
        if self._spare is not None:
            self._spare[1].close()
            self._spare = None

    def _send(self, message: p.SpareTaken | p.ForkSpare) -> None:
        try:
            self._control.send(p.packet(message))
        except OSError as error:
            # The task process runs anyway; its server is gone, and it with it (PDEATHSIG).
            self._went(f"the fork server is gone: {error}")

    def _went(self, why: str) -> None:
        if not self.gone:
            self.gone = True
            self._error = why
            self._drop_spare()
            self._control.close()
            # Its channel failed: exited, or too stuck to read. Either way it is no use now,
            # and must not be left running beside the one started in its place.
            self._process.kill()
            code = self._process.wait(_REPORT_TIMEOUT_SECONDS)  # a SIGKILL is not ignored
            log.warning("%s (exit code %s); starting another", why, code)


class TryChannels:
    """One try's comms socket and stdout/stderr pipes: the near ends stay, the far ones go to
    the task process."""

    def __init__(self) -> None:
        self.comms, self._child_comms = comms_pair()
        self.out_read, self._out_write = os.pipe()
        self.err_read, self._err_write = os.pipe()
        self.far_ends = [self._child_comms.fileno(), self._out_write, self._err_write]

    def close_far_ends(self) -> None:
        self._child_comms.close()
        os.close(self._out_write)
        os.close(self._err_write)

    def close_near_ends(self) -> None:
        self.comms.close()
        os.close(self.out_read)
        os.close(self.err_read)

    def process(
        self, pid: int, report: Callable[[bool], int | None], warm: WarmProcess | None
    ) -> TaskProcess:
        return TaskProcess(
            pid, self.comms, self.out_read, self.err_read, exit_report=report, warm=warm
        )


#: Each slot's fork server (``worker/slots.py``): one per supervising thread, so that a server's
#: channel, its spare and its exit reports are read by one supervisor only, with no lock held
#: across the waits for them.
_servers: PerSlot[ForkServer] = PerSlot()
#: Servers started ahead, at the worker's start, for the first slots that need one.
_ready: list[ForkServer] = []
_enabled = False


def use_fork_server(servers: int = 1) -> None:
    """From now on, this process's Python task processes come from fork servers, one per slot;
    ``servers`` of them are started now, so their imports overlap the worker's start."""
    global _enabled
    _enabled = True
    _ready.extend(ForkServer() for _ in range(servers))


def stop_fork_server() -> None:
    """Back to forking task processes here; every slot's fork server exits, with what it runs.

    Called once no supervisor runs (a pool process exits, or the threads pool has stopped).
    """
    global _enabled
    _enabled = False
    drop_all_idle()
    servers = [*_servers.take_all(), *_ready]
    _ready.clear()
    for server in servers:
        server.close()


def kill_fork_servers() -> None:
    """SIGKILL every slot's fork server, and so its task processes (a cold shutdown).

    A supervisor thread cannot be stopped from outside: its task's death ends its try now, as
    a killed try (retried if it has tries left), where waiting for the task would hold the
    shutdown for as long as the task runs.
    """
    for server in _servers.values():
        server.kill()


def current_server() -> ForkServer | None:
    """The fork server this slot uses (None: the fork server is off)."""
    return _slot_server() if _enabled else None


def _slot_server() -> ForkServer:
    server = _servers.get()
    if server is None or server.gone:
        try:
            server = _ready.pop()
        except IndexError:
            server = ForkServer()
        _servers.put(server)
    return server


def start_python_task(
    fileloc: str,
    dag: DAG,
    task: Task,
    details: p.TaskDetails | None = None,
    reuse: int = 1,
    timeout_seconds: float = DEFAULT_START_TIMEOUT_SECONDS,
) -> TaskProcess:
    """Start the task process of ``task``: from the fork server if this process uses one.

    ``details``: the handshake's reply, if the supervisor has it now (the task skips asking).
    ``reuse``: TRADEWIND_TASK_PROCESS_REUSE, the tries one task process may run (fork server
    only): above 1, the try goes to the idle task process if one waits
    (``worker/fork_server/warm.py``). ``timeout_seconds``: how long the hand-over may take
    (TRADEWIND_TASK_START_TIMEOUT_SECONDS), past which ``HandOverTimeout``.
    """
    if not _enabled:
        return fork_python_task(task_body(dag, task, details))
    reap_finished()
    warm = take_idle() if reuse > 1 else None
    if warm is not None:
        start = p.StartTaskProcess(
            fileloc=fileloc, dag_id=dag.dag_id, task_id=task.task_id, details=details
        )
        started = _start_warm(warm, start, reuse, timeout_seconds)
        if started is not None:
            return started
    for _attempt in range(2):  # each bounded by the timeout: twice the timeout at most
        try:
            server = _slot_server()
            return server.start(
                fileloc, dag.dag_id, task.task_id, details, reuse > 1, timeout_seconds
            )
        except ForkServerGone:
            continue  # started again once: a server killed between two tries is no failure
    raise ForkServerError("the fork server exited twice in a row: see the worker's log")


def _start_warm(
    warm: WarmProcess, start: p.StartTaskProcess, reuse: int, timeout_seconds: float
) -> TaskProcess | None:
    """The try started in the idle task process ``warm``; None if it died meanwhile."""
    start.then_wait = next_start(warm, reuse)
    try:
        packet = p.start_packet(start)
    except p.ProtocolError as error:
        warm.close()
        raise ForkServerError(str(error)) from None
    channels = TryChannels()
    sent = start_in(warm, packet, channels.far_ends, timeout_seconds)
    channels.close_far_ends()
    if not sent:
        channels.close_near_ends()
        return None
    if not start.then_wait:
        warm.close()  # its last try: it exits after it, as a fresh process does
    return channels.process(warm.pid, warm.exit_report, warm if start.then_wait else None)
