"""The supervisor: runs one claimed try in a task process and services it until it ends.

One selector loop, waiting until the nearest deadline (heartbeat due, timeout, kill grace), all
measured on ``time.monotonic()``. It answers the task's requests, copies its output to the try's
log, heartbeats with a fenced write (learning there if the try was taken away), enforces
``execution_timeout`` on the task's whole process group, and says how the try ended: one
``state.engine.outcomes`` value, the task's own or a ``Failed`` of the supervisor's (timeout,
crash), which the store judges and records (``state.engine.try_life.record``).
"""

from __future__ import annotations

import logging
import os
import selectors
import signal
import time
from collections.abc import Callable
from contextlib import closing, suppress
from dataclasses import dataclass, field

from pydantic import ValidationError
from sqlalchemy.exc import SQLAlchemyError

from state.core import BeatSchedule, OutageLog, TryFenced, budget_seconds, is_store_outage, one_line
from state.engine import Failed, HeldTry, Outcome, Skipped, beat
from worker import wire as p
from worker.fork_server.warm import keep_or_release
from worker.process import TaskProcess, close_process_handles, reap_later
from worker.supervisor.requests import handle
from worker.supervisor.try_context import TryContext
from worker.wire.outbox import Outbox

log = logging.getLogger(__name__)
_READ_BYTES = 65536


@dataclass
class Deadlines:
    """When the loop must wake next, in ``time.monotonic()`` seconds."""

    heartbeat: float
    timeout: float | None
    kill: float | None = None
    stopping_reason: str | None = None

    def nearest(self) -> float:
        return min(t for t in (self.heartbeat, self.timeout, self.kill) if t is not None)


@dataclass
class SupervisorLoop:
    """Services one task process until it has exited and its output is drained."""

    process: TaskProcess
    ctx: TryContext
    heartbeat_seconds: float
    kill_grace_seconds: float
    execution_timeout_seconds: float | None
    timed_out: bool = False
    _open: set[int] = field(default_factory=set)

    def run(self) -> None:
        now = time.monotonic()
        timeout = now + self.execution_timeout_seconds if self.execution_timeout_seconds else None
        self.deadlines = Deadlines(heartbeat=now + self.heartbeat_seconds, timeout=timeout)
        beats = OutageLog(f"heartbeats of task instance {self.ctx.fence.ti_id}", log)
        self._beats = BeatSchedule(self.heartbeat_seconds, beats, last_success=now)
        self.frames = p.FrameBuffer()
        with selectors.DefaultSelector() as selector, closing(self.ctx.background):
            self._register(selector)
            while self._open or (self.process.poll() is None and not self._said_and_closed()):
                wait = max(0.0, self.deadlines.nearest() - time.monotonic())
                if self.process.exit_code is not None or (not self._open and self._pidfd is None):
                    wait = min(wait, 0.05)  # exited: only drain what is left, then stop
                for key, _ in selector.select(wait):
                    key.data(selector, key.fileobj)
                for reply in self.ctx.take_replies():  # those the events above made ready
                    self._send(reply)
                self._on_deadlines()
                if self.process.poll() is not None and self._drain_expired():
                    break
            self._wind_down(selector)
        if self._pidfd is not None:
            os.close(self._pidfd)
        # Whatever the task left running in its group goes with it; for a task still exiting
        # (said and closed), once it is reaped (``reap_later``): a SIGKILL sent to its group
        # while it exits was seen to kill the next task process of this slot too.
        if self.process.exit_code is not None:
            self.process.signal_group(signal.SIGKILL)

    def _register(self, selector: selectors.BaseSelector) -> None:
        selector.register(self.process.comms, selectors.EVENT_READ, self._on_comms)
        # Replies go out without blocking: a task slow to read must not hold up heartbeats.
        self.process.comms.setblocking(False)
        self._outbox = Outbox(self.process.comms)
        self._selector = selector
        selector.register(self.process.stdout, selectors.EVENT_READ, self._pipe_reader("stdout"))
        selector.register(self.process.stderr, selectors.EVENT_READ, self._pipe_reader("stderr"))
        self._open = {self.process.comms.fileno(), self.process.stdout, self.process.stderr}
        self._exited_at: float | None = None
        self._pidfd = _pidfd_of(self.process.pid)
        if self._pidfd is not None:
            # Wakes the loop the moment the task exits: its pipes close a little before it can
            # be reaped, and polling for that costs a noop task most of its run time.
            selector.register(self._pidfd, selectors.EVENT_READ, self._on_exit)
        self.ctx.background.register(selector)
        if self.ctx.xcoms.helper is not None:
            # Its look-ups and secrets are answered as the task's are.
            self.ctx.xcoms.helper.register(selector, lambda message: handle(self.ctx, message))

    def _said_and_closed(self) -> bool:
        """The task said how it ended, then closed every channel: nothing more can come of it.

        Its exit code would add nothing, and waiting for the kernel to tear the process down
        costs a noop try ~4 ms; it is reaped later (``reap_later``).
        """
        return not self._open and self.ctx.outcome is not None and not self.timed_out

    def ended_cleanly(self) -> bool:
        """Said and closed, never stopped: its task process may run another try
        (worker/fork_server/warm.py)."""
        deadlines: Deadlines | None = getattr(self, "deadlines", None)  # None: run() never began
        return (
            deadlines is not None
            and deadlines.stopping_reason is None
            and self._said_and_closed()
            and self.process.exit_code is None
        )

    def _on_exit(self, selector: selectors.BaseSelector, fileobj: object) -> None:
        selector.unregister(fileobj)  # type: ignore[arg-type]
        os.close(fileobj)  # type: ignore[arg-type]
        self._pidfd = None
        self.process.poll()

    def _drain_expired(self) -> bool:
        # A grandchild that inherited the pipes may keep them open forever: stop waiting soon.
        if self._exited_at is None:
            self._exited_at = time.monotonic()
        return not self._open or time.monotonic() - self._exited_at > 1.0

    def _close(self, selector: selectors.BaseSelector, fileobj: object) -> None:
        selector.unregister(fileobj)  # type: ignore[arg-type]
        fd = fileobj if isinstance(fileobj, int) else fileobj.fileno()  # type: ignore[attr-defined]
        self._open.discard(fd)

    def _pipe_reader(self, source: str) -> Callable[[selectors.BaseSelector, object], None]:
        def read(selector: selectors.BaseSelector, fileobj: object) -> None:
            data = os.read(fileobj, _READ_BYTES)  # type: ignore[arg-type]
            if not data:
                self._close(selector, fileobj)
                # Before the supervisor's own last lines, not after them at close.
                self.ctx.log.end(source)
            else:
                self.ctx.log.feed(source, data)

        return read

    def _on_comms(self, selector: selectors.BaseSelector, fileobj: object) -> None:
        self._flush()
        try:
            data = self.process.comms.recv(_READ_BYTES)
        except BlockingIOError:
            return  # woken to write a reply, nothing to read
        except ConnectionResetError:
            data = b""
        if not data:
            self._close(selector, fileobj)
            return
        try:
            frames = self.frames.feed(data)
        except p.ProtocolError as error:
            self._stop(f"protocol error: {error}")
            self._close(selector, fileobj)
            return
        for frame in frames:
            self._answer(frame)

    def _answer(self, frame: bytes) -> None:
        try:
            request = p.TO_SUPERVISOR.validate_json(frame)
        except ValidationError as error:
            reply: p.Message | None = p.ErrorResponse(
                error=f"unknown or malformed request: {error.errors()[0]['msg']}"
            )
        else:
            reply = handle(self.ctx, request)
        if reply is not None:  # None: the handler replies later, through ctx.reply_later
            self._send(reply)

    def _send(self, reply: p.Message) -> None:
        self._outbox.put(p.encode(reply))
        self._flush()
        if self.ctx.lost:
            self._stop("the try no longer holds its task instance")

    def _flush(self) -> None:
        try:
            self._outbox.flush()
        except OSError:
            self._outbox.clear()  # a task that is gone cannot take its reply; its exit is seen
        comms = self.process.comms
        if comms.fileno() in self._open:
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if self._outbox else 0)
            if self._selector.get_key(comms).events != events:
                self._selector.modify(comms, events, self._on_comms)

    def _on_deadlines(self) -> None:
        now = time.monotonic()
        if now >= self.deadlines.heartbeat:
            self._heartbeat(now)
        if self.deadlines.timeout is not None and now >= self.deadlines.timeout:
            self.deadlines.timeout = None
            self.timed_out = True
            self._stop(f"execution_timeout of {self.execution_timeout_seconds:g}s exceeded")
        if self.deadlines.kill is not None and now >= self.deadlines.kill:
            self.deadlines.kill = None
            if self.process.poll() is None:
                self.ctx.log.line("supervisor", "still running after SIGTERM: sending SIGKILL")
                self.process.signal_group(signal.SIGKILL)

    def _wind_down(self, selector: selectors.BaseSelector) -> None:
        """Finish a row still being written and stop the XCom helper, heartbeating meanwhile:
        the try is not recorded yet."""
        helper, background = self.ctx.xcoms.helper, self.ctx.background
        if helper is not None:
            helper.begin_stop(time.monotonic())
        while background.pending or (helper is not None and not helper.finished()):
            wake = self.deadlines.heartbeat
            if helper is not None:
                wake = min(helper.next_deadline(), wake)
            for key, _ in selector.select(max(0.0, wake - time.monotonic())):
                key.data(selector, key.fileobj)
            now = time.monotonic()
            if helper is not None:
                helper.on_time(now)
            if now >= self.deadlines.heartbeat and not self.ctx.lost:
                self._beat(now)

    def _heartbeat(self, now: float) -> None:
        if self.ctx.lost or self.process.poll() is not None:
            self.deadlines.heartbeat = now + self.heartbeat_seconds
            return
        self._beat(now)

    def _beat(self, now: float) -> None:
        """One fenced heartbeat; it sets when the next one is due."""
        self.deadlines.heartbeat = now + self.heartbeat_seconds
        try:
            beat(self.ctx.url, self.ctx.fence)
        except TryFenced:
            self.ctx.lost = True
            self._stop("the try no longer holds its task instance (cleared, failed or a zombie)")
        except SQLAlchemyError as error:
            if is_store_outage(error):
                self._beat_failed(error)
            else:  # survivable: the zombie threshold is several intervals long
                log.warning("heartbeat of task instance %s failed: %s", self.ctx.fence.ti_id, error)
        else:
            self.deadlines.heartbeat = self._beats.succeeded(time.monotonic())

    def _beat_failed(self, error: SQLAlchemyError) -> None:
        """The store is away: beat again soon, until the try is past saving
        (state/core/outage.py)."""
        due = self._beats.failed(error, time.monotonic())
        if due is not None:
            self.deadlines.heartbeat = due
            return
        reason = (
            f"no heartbeat recorded for over {budget_seconds():g}s ({one_line(error)}): "
            "the zombie rule takes the try"
        )
        log.error("task instance %s: %s", self.ctx.fence.ti_id, reason)
        self.ctx.lost = True
        self._stop(reason)

    def _stop(self, reason: str) -> None:
        if self.deadlines.stopping_reason is not None:
            return
        self.deadlines.stopping_reason = reason
        if self.ctx.lost and self.process.popen is None:
            # A Python task process learns first that its try was given up, so a request the
            # SIGTERM cuts in half does not make it run the failure callbacks (its handler
            # is set before its first request; SIGUSR2 is handled before SIGTERM).
            with suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGUSR2)
        if self.process.warm is not None:
            self.process.warm.close()  # a stopped try ends its process: it must not wait idle
        self.ctx.log.line("supervisor", f"{reason}: sending SIGTERM to the task's process group")
        self.process.signal_group(signal.SIGTERM)
        self.deadlines.kill = time.monotonic() + self.kill_grace_seconds


def _pidfd_of(pid: int) -> int | None:
    """A file descriptor that becomes readable when ``pid`` exits (Linux 5.3+), else None."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def outcome_of(loop: SupervisorLoop) -> Outcome | None:
    """How the try ended, from what the task said and how its process exited; None when the try
    lost its task instance (nothing is recorded). The store judges it
    (``state.engine.try_life``)."""
    ctx = loop.ctx
    if ctx.lost:
        return None
    if loop.timed_out:
        return Failed(loop.deadlines.stopping_reason or "timed out")
    outcome, code = ctx.outcome, loop.process.exit_code
    if isinstance(outcome, Failed | Skipped):
        return outcome  # it stands, whatever the exit code
    # None: the task closed its channels after saying it succeeded, and was not waited for. A
    # success (or a reschedule) said by a process that then crashed is not one.
    if outcome is not None and code in (0, None):
        return outcome
    reason = loop.deadlines.stopping_reason or _describe_exit(code)
    return Failed(f"task process ended without an outcome: {reason}")


def _describe_exit(code: int | None) -> str:
    if code is not None and code < 0:
        return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


def supervise_process(
    process: TaskProcess, ctx: TryContext, held: HeldTry, settings: SupervisorSettings
) -> Outcome | None:
    loop = SupervisorLoop(
        process,
        ctx,
        heartbeat_seconds=settings.heartbeat_seconds,
        kill_grace_seconds=settings.kill_grace_seconds,
        execution_timeout_seconds=held.task_spec.execution_timeout_seconds,
    )
    try:
        loop.run()
    except BaseException:
        process.signal_group(signal.SIGKILL)  # no task may outlive the supervision of its try
        raise
    finally:
        close_process_handles(process)
        if not keep_or_release(process.warm, ctx.log, loop.ended_cleanly()):
            reap_later(process)
    return outcome_of(loop)


@dataclass(frozen=True)
class SupervisorSettings:
    heartbeat_seconds: float
    kill_grace_seconds: float
