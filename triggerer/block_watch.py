"""Naming the trigger that holds the triggerer's loop (a blocking call, a busy loop).

A coroutine on the loop ticks every ``TICK`` seconds; a thread beside it looks at the last
tick. When the loop has not ticked for longer than the threshold, the thread reads the loop
thread's current stack (``sys._current_frames``) and names the trigger whose code is running
there: its id, its class and the line it is on. One warning per stall, and one line when the
loop is free again saying how long it was held. The loop itself pays one timer per tick.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
from types import FrameType

from tradewind.triggers.base import BaseTrigger

TICK = 0.05


class BlockWatch(threading.Thread):
    def __init__(self, loop_thread: int, threshold: float, log: logging.Logger) -> None:
        super().__init__(name="block-watch", daemon=True)
        self.loop_thread = loop_thread
        self.threshold = threshold
        self.log = log
        self.last_tick = time.monotonic()
        self._halt = threading.Event()
        #: Every stall seen: (what held the loop, seconds) — read by tests and the bench.
        self.stalls: list[tuple[str, float]] = []

    async def tick(self) -> None:
        while True:
            self.last_tick = time.monotonic()
            await asyncio.sleep(TICK)

    def stop(self) -> None:
        self._halt.set()

    def run(self) -> None:
        held_by: str | None = None
        since = 0.0
        while not self._halt.wait(TICK):
            lag = time.monotonic() - self.last_tick - TICK
            if lag > self.threshold and held_by is None:
                since = self.last_tick + TICK
                held_by = self._culprit()
                self.log.warning(
                    "%s has held the triggerer's loop for %.1fs without yielding: its run() "
                    "must await, not block (every other trigger waits meanwhile)",
                    held_by,
                    lag,
                )
            elif lag <= self.threshold and held_by is not None:
                held = max(0.0, self.last_tick - since)
                self.stalls.append((held_by, held))
                self.log.warning("the loop is free again: %s held it for %.2fs", held_by, held)
                held_by = None

    def _culprit(self) -> str:
        frame = sys._current_frames().get(self.loop_thread)
        trigger, line = _trigger_in(frame)
        if trigger is None:
            return f"the loop's own code ({line})"
        name = f"{type(trigger).__module__}.{type(trigger).__qualname__}"
        return f"trigger {trigger.trigger_id} ({name}, at {line})"


def _trigger_in(frame: FrameType | None) -> tuple[BaseTrigger | None, str]:
    innermost = f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else "?"
    while frame is not None:
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, BaseTrigger):
            return candidate, f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None, innermost
