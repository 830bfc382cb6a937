"""The supervisor's side of the backend helper process (DESIGN.md §6's XCom backend helper).

The helper runs the storage backends the supervisor must not run itself: the XCom backend, for
a runtime task with a non-default one (and for a retry's purge of what an earlier try stored),
and the state store's object-storage backend, for the large state values of any task. The
supervisor starts at most one helper per try (``worker/helper/main.py``) and services it
from the same selector as the task, so a slow backend call never delays the task's heartbeats
or its ``execution_timeout``:

- the helper asks for a call (``AwaitXComBackendCall``) and answers with its result
  (``XComBackendResult``), which also asks for the next; a call is sent only when asked for;
- one call runs at a time; the rest wait in order, each with the callback that takes its result;
- its Connection and Variable look-ups (and ``MaskSecret``) are answered like the task's;
- when the helper exits, every call still waiting is failed with a clear error, and later calls
  fail at once;
- stopping sends ``exit`` (at once if the helper is waiting for a call, else when it next asks),
  waits up to ``exit_timeout_seconds``, then terminates its process group.

With the state store on object storage, a try that has no helper gets a
``BackendHelperOnDemand``, whose process starts at its first call (the try's first large state
value).

Frames to the helper go through a non-blocking outbox: a helper that stops reading cannot block
the loop, however large the value it was sent.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import sys
import time
from collections import deque
from collections.abc import Callable

from pydantic import ValidationError

from worker import wire as p
from worker.process import TaskProcess, close_process_handles, exec_runtime_task
from worker.supervisor.logs import TryLog
from worker.wire.outbox import Outbox
from worker.xcom.calls import Finish

HELPER_COMMAND = (sys.executable, "-P", "-m", "worker.helper.main")
LOG_SOURCE = "backend-helper"
_READ_BYTES = 1 << 20
#: After SIGTERM, how long a helper may take to go before SIGKILL.
_TERMINATE_GRACE_SECONDS = 2.0
Answer = Callable[[p.Message], p.Message | None]


class BackendHelper:
    """One helper process: its queue of calls and its three channels in the try's selector."""

    exit_timeout_seconds: float = 10.0

    def __init__(self, process: TaskProcess, log: TryLog) -> None:
        self.process = process
        self._answer: Answer | None = None  # given with the selector that services the helper
        self._log = log
        self._frames = p.FrameBuffer()
        self._outbox = Outbox(process.comms)
        self._queued: deque[tuple[p.XComBackendCall, Finish]] = deque()
        self._running: Finish | None = None
        self._asked_id: int | None = None  # the id of the helper's pending ask for a call
        self._gone: str | None = None  # why no call can run any more
        self._selector: selectors.BaseSelector | None = None
        self._open: set[int] = set()
        self._stop_at: float | None = None
        self._kill_at: float | None = None
        process.comms.setblocking(False)

    @classmethod
    def start(cls, log: TryLog) -> BackendHelper:
        process = exec_runtime_task(HELPER_COMMAND)
        log.line(
            "supervisor",
            f"started the backend helper process for XComs and state objects (pid {process.pid})",
        )
        return cls(process, log)

    # --- the queue --------------------------------------------------------------------------

    def call(self, call: p.XComBackendCall, finish: Finish) -> None:
        """Run ``call`` when its turn comes; ``finish`` takes its result or why it failed."""
        if self._gone is not None:
            finish(p.XComBackendResult(error=self._gone))
            return
        self._queued.append((call, finish))
        self._send_next()

    @property
    def waiting(self) -> int:
        """Calls not answered yet: the running one and the queued ones."""
        return len(self._queued) + (self._running is not None)

    def _send_next(self) -> None:
        if self._asked_id is None or self._running is not None:
            return
        if self._stop_at is not None:
            self._send(p.XComBackendCall(id=self._asked_id, operation="exit"))
            self._asked_id = None
        elif self._queued:
            call, self._running = self._queued.popleft()
            call.id, self._asked_id = self._asked_id, None
            self._send(call)

    def _fail_waiting(self, error: str) -> None:
        waiting = [self._running] if self._running is not None else []
        waiting += [finish for _, finish in self._queued]
        self._running = None
        self._queued.clear()
        for finish in waiting:
            finish(p.XComBackendResult(error=error))

    # --- the channels -----------------------------------------------------------------------

    def register(self, selector: selectors.BaseSelector, answer: Answer) -> None:
        """Service the helper from ``selector``; ``answer`` replies to its own requests."""
        self._selector = selector
        self._answer = answer
        selector.register(self.process.comms, selectors.EVENT_READ, self._on_comms)
        for fd in (self.process.stdout, self.process.stderr):
            selector.register(fd, selectors.EVENT_READ, self._on_output)
        self._open = {self.process.comms.fileno(), self.process.stdout, self.process.stderr}
        self._watch_writes()

    def _on_output(self, selector: selectors.BaseSelector, fileobj: object) -> None:
        fd = int(fileobj)  # type: ignore[call-overload]
        data = os.read(fd, _READ_BYTES)
        if data:
            self._log.feed(LOG_SOURCE, data)
        else:
            self._unregister(fd)

    def _on_comms(self, selector: selectors.BaseSelector, fileobj: object) -> None:
        self._flush()
        try:
            data = self.process.comms.recv(_READ_BYTES)
        except BlockingIOError:
            return  # woken to write, nothing to read
        except ConnectionResetError:
            data = b""
        if not data:
            self._on_closed()
            return
        try:
            frames = self._frames.feed(data)
        except p.ProtocolError as error:
            self._on_broken(f"sent a bad frame: {error}")
            return
        for frame in frames:
            self._on_frame(frame)

    def _on_frame(self, frame: bytes) -> None:
        try:
            message = p.FROM_HELPER.validate_json(frame)
        except ValidationError as error:
            self._on_broken(f"sent an unknown message: {error.errors()[0]['msg']}")
            return
        if isinstance(message, p.AwaitXComBackendCall):
            self._asked_id = message.id
            self._send_next()
        elif isinstance(message, p.XComBackendResult):
            finish, self._running = self._running, None
            self._asked_id = message.id
            self._send_next()
            if finish is not None:
                finish(message)
        else:
            assert self._answer is not None, "frames are read only once it is registered"
            reply = self._answer(message)
            if reply is not None:
                self._send(reply)

    def _send(self, message: p.Message) -> None:
        if self._gone is None:
            self._outbox.put(p.encode(message))
            self._flush()

    def _flush(self) -> None:
        try:
            self._outbox.flush()
        except OSError:
            self._outbox.clear()  # the helper is gone; reading EOF will say so
        self._watch_writes()

    def _watch_writes(self) -> None:
        comms = self.process.comms
        if self._selector is None or comms.fileno() not in self._open:
            return
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if self._outbox else 0)
        if self._selector.get_key(comms).events != events:
            self._selector.modify(comms, events, self._on_comms)

    def _on_broken(self, reason: str) -> None:
        self._log.line("supervisor", f"the backend helper process {reason}: stopping it")
        self.process.signal_group(signal.SIGKILL)
        self._on_closed()

    def _on_closed(self) -> None:
        self._unregister(self.process.comms.fileno())
        self._outbox.clear()
        if self._gone is None:
            self._gone = (
                f"the backend helper process exited ({self._describe_exit()}) before it answered"
            )
            if self._stop_at is None and self.waiting:
                self._log.line("supervisor", f"{self._gone}: failing {self.waiting} call(s)")
        self._fail_waiting(self._gone)

    def _describe_exit(self) -> str:
        # The channel closes as the process exits; give the kernel a moment to report how.
        deadline = time.monotonic() + 0.05
        while (code := self.process.poll()) is None and time.monotonic() < deadline:
            time.sleep(0.002)
        if code is None:
            return "its channel closed"
        if code < 0:
            return f"killed by {signal.Signals(-code).name}"
        return f"exit code {code}"

    def _unregister(self, fd: int) -> None:
        if fd in self._open and self._selector is not None:
            self._open.discard(fd)
            self._selector.unregister(fd)

    # --- stopping ---------------------------------------------------------------------------

    def begin_stop(self, now: float) -> None:
        """Drop the calls nobody waits for any more; ask the helper to exit."""
        if self._stop_at is not None:
            return
        self._queued.clear()
        self._stop_at = now + self.exit_timeout_seconds
        self._send_next()

    def next_deadline(self) -> float:
        if self._stop_at is not None and not self._open:
            # Its channels closed: it is exiting, and only a poll can tell when it is gone.
            return time.monotonic() + 0.01
        return self._kill_at or self._stop_at or float("inf")

    def on_time(self, now: float) -> None:
        """Terminate a helper that outlived its exit timeout; SIGKILL one that outlives that."""
        if self._stop_at is not None and self._kill_at is None and now >= self._stop_at:
            self._log.line(
                "supervisor",
                f"the backend helper process did not exit within "
                f"{self.exit_timeout_seconds:g}s: sending SIGTERM",
            )
            self.process.signal_group(signal.SIGTERM)
            self._kill_at = now + _TERMINATE_GRACE_SECONDS
        elif self._kill_at is not None and now >= self._kill_at:
            self.process.signal_group(signal.SIGKILL)
            self._kill_at = float("inf")

    def finished(self) -> bool:
        """Exited, and its output read to the end (or abandoned after the kill)."""
        if self.process.poll() is None:
            return False
        return not self._open or self._kill_at == float("inf")

    def close(self) -> None:
        """Release everything, killing the helper if it is somehow still there."""
        if self.process.poll() is None:
            self.process.signal_group(signal.SIGKILL)
            with contextlib.suppress(OSError):
                if self.process.popen is not None:
                    self.process.popen.wait(5)
        self._open.clear()  # the try's selector is closed by now
        if self._gone is None:
            self._gone = "the backend helper process was stopped"
        self._fail_waiting(self._gone)
        close_process_handles(self.process)


class BackendHelperOnDemand:
    """A helper process started by its first call: a try that never needs one pays nothing.

    Used for the state store's objects (``worker/state_store/serving.py``): most tries never
    store a large state value, and a helper costs an interpreter start. It is registered in the
    try's selector like a started helper, and starts (and registers) its process when a call
    first comes, which is always from the loop.
    """

    def __init__(self, log: TryLog) -> None:
        self._log = log
        self._registered: tuple[selectors.BaseSelector, Answer] | None = None
        self.started: BackendHelper | None = None

    def call(self, call: p.XComBackendCall, finish: Finish) -> None:
        if self.started is None:
            self.started = BackendHelper.start(self._log)
            if self._registered is not None:
                self.started.register(*self._registered)
        self.started.call(call, finish)

    def register(self, selector: selectors.BaseSelector, answer: Answer) -> None:
        self._registered = (selector, answer)
        if self.started is not None:
            self.started.register(selector, answer)

    def begin_stop(self, now: float) -> None:
        if self.started is not None:
            self.started.begin_stop(now)

    def next_deadline(self) -> float:
        return self.started.next_deadline() if self.started is not None else float("inf")

    def on_time(self, now: float) -> None:
        if self.started is not None:
            self.started.on_time(now)

    def finished(self) -> bool:
        return self.started is None or self.started.finished()

    def close(self) -> None:
        if self.started is not None:
            self.started.close()
