"""Warm task processes, the supervisor's side: one task process kept for the next try.

With ``TRADEWIND_TASK_PROCESS_REUSE=N`` (N > 1) a Python task process that ended its try cleanly
waits for the next one instead of exiting, up to N tries (DESIGN.md §7, as Celery's
``worker_max_tasks_per_child``): the fork, the process's set-up and its teardown are then paid
once per N tries, not once per try. The supervisor keeps the spare's channel of the fork
server (``WarmProcess``), and sends the next ``StartTaskProcess`` down it, with the next try's
own socket and pipes.

Which process is kept is decided twice. The task process says whether the try left it fit for
another (``TaskProcessIdle``) or not (``TaskProcessExiting``: a child process still there, a
thread still running, its working directory or environment changed;
``worker/task_runner/warm_loop.py``). The supervisor adds what only it knows: a try that timed
out, was stopped, or whose process exited or never said either, ends that process. A slot (a
thread of the threads pool, or a prefork pool process) runs one try at a time, so it keeps at most
one idle process, its own: its exit is reported on that slot's fork server (``worker/slots.py``).
"""

from __future__ import annotations

import select
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from worker import wire as p
from worker.slots import PerSlot

if TYPE_CHECKING:
    from worker.supervisor.logs import TryLog


@dataclass
class WarmProcess:
    """A task process started with ``then_wait``: its pid, the channel to it, its tries so far."""

    pid: int
    channel: socket.socket
    exit_report: Callable[[bool], int | None]
    tries: int = 1

    def said(self) -> p.FromWarmTaskProcess | None:
        """What the task process said after its try (None: nothing, it exited or crashed).

        It says it before it closes the try's socket and pipes, so once the supervisor has
        seen those close the answer is already here: this never waits.
        """
        if self.channel.fileno() < 0:  # let go already: its try was stopped
            return None
        try:
            packet, _fds = p.receive_packet(self.channel, flags=socket.MSG_DONTWAIT)
        except (BlockingIOError, ConnectionError):
            return None
        if not packet:
            return None
        return p.FROM_WARM_TASK_PROCESS.validate_json(packet)

    def alive(self) -> bool:
        """False once the process has closed its end (it died while idle: a signal, its server)."""
        readable, _, _ = select.select([self.channel], [], [], 0)
        return not readable  # an idle process sends nothing: readable means gone

    def close(self) -> None:
        """Let it go: an idle task process exits when its channel closes."""
        self.channel.close()


_idle: PerSlot[WarmProcess] = PerSlot()


def idle_process() -> WarmProcess | None:
    """This slot's idle task process, if one waits (left idle)."""
    return _idle.get()


def take_idle() -> WarmProcess | None:
    """This slot's idle task process, if one waits and is still alive (taken: no longer idle)."""
    warm = _idle.take()
    if warm is not None and not warm.alive():
        warm.close()
        return None
    return warm


def drop_idle() -> None:
    """Let this slot's idle task process, if any, exit (its server went)."""
    warm = _idle.take()
    if warm is not None:
        warm.close()


def drop_all_idle() -> None:
    """Let every slot's idle task process exit (the worker stops)."""
    for warm in _idle.take_all():
        warm.close()


def keep_or_release(warm: WarmProcess | None, log: TryLog, clean: bool) -> bool:
    """After a try: keep its task process (``warm``, None for a process that exits after its
    try) for the next one if it may run another; True if kept.

    ``clean``: the supervisor saw the try end as a try must for its process to be reused (it
    said how it ended and closed its channels; no timeout, no stop). A process not kept
    is let go, and reaped by the caller as any other.
    """
    if warm is None:
        return False
    said = warm.said()
    if clean and isinstance(said, p.TaskProcessIdle):
        drop_idle()
        _idle.put(warm)
        return True
    if isinstance(said, p.TaskProcessExiting):
        log.line("supervisor", f"the task process is not reused: {said.reason}")
    warm.close()
    return False


def next_start(warm: WarmProcess | None, reuse: int) -> bool:
    """Whether the try about to start in ``warm`` (None: a fresh process) should wait after it."""
    tries = 1 if warm is None else warm.tries + 1
    return tries < reuse


def start_in(warm: WarmProcess, packet: bytes, fds: list[int], timeout_seconds: float) -> bool:
    """Send the next try's start ``packet`` to the idle process ``warm``; False if it is gone
    (it died meanwhile) or took no packet within ``timeout_seconds``."""
    try:
        warm.channel.settimeout(max(0.1, timeout_seconds))
        socket.send_fds(warm.channel, [packet], fds)
        warm.channel.settimeout(None)
    except OSError:
        warm.close()
        return False
    warm.tries += 1
    return True
