"""The triggerer's loop: claim triggers, run them, beat for them, record their events.

One asyncio loop runs every trigger this triggerer holds, each as one task; the store is read
and written on one thread beside it (``asyncio.to_thread`` would spread the calls over a pool:
one thread keeps them in order and the loop never waits on SQL). Each turn:

- events and failures the triggers produced are recorded in one transaction, fenced by this
  triggerer's token (``state.engine.fire_triggers``): an event of a trigger this triggerer no
  longer holds is refused;
- every ``heartbeat_seconds`` the held rows are beaten; a row no longer held (taken over by
  another triggerer after this one stalled, its task instance cleared or marked, its deferral
  timed out) has its trigger cancelled;
- every ``claim_seconds``: deferrals past their timeout are failed, and free rows (never
  claimed, or whose holder stopped beating for ``zombie_threshold_seconds``) are claimed, up to
  ``capacity``, with ``FOR UPDATE SKIP LOCKED``.

A trigger that holds the loop is named by the watch (``triggerer.block_watch``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import datetime as dt
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from state.core import session_scope, set_gauge, start_flushing, utcnow
from state.engine import (
    ClaimedTrigger,
    TriggerOutcome,
    beat_triggers,
    claim_triggers,
    drop_stale_triggers,
    fire_triggers,
    release_triggers,
    time_out_deferrals,
)
from state.records import Heart, JobKind, StoreLookups
from tradewind.loader import one_line_error
from tradewind.settings import Settings
from tradewind.triggers.base import BaseTrigger, TriggerEvent, encode_kwargs
from tradewind.triggers.services import set_cross_dag, set_lookups
from triggerer.block_watch import BlockWatch
from triggerer.classes import TriggerClasses
from triggerer.cross_dag import StoreCrossDag

log = logging.getLogger("tradewind.triggerer")
#: Triggers of task instances no longer deferred are dropped every this many claim turns.
DROP_EVERY = 30
T = TypeVar("T")


class Triggerer:
    """One triggerer process's loop; ``run_forever`` until ``stop`` is set."""

    def __init__(
        self,
        settings: Settings,
        capacity: int | None = None,
        claim_seconds: float = 1.0,
        block_threshold_seconds: float = 0.2,
    ) -> None:
        self.settings = settings
        self.url = settings.sql_url
        self.capacity = capacity or settings.triggerer_capacity
        self.claim_seconds = claim_seconds
        self.beat_seconds = settings.heartbeat_seconds
        self.threshold = settings.zombie_threshold_seconds
        self.block_threshold = block_threshold_seconds
        self.id = f"{socket.gethostname()}:{os.getpid()}"
        # Fences every write of this triggerer: a new one per process, never reused.
        self.token = uuid.uuid4().hex
        self.classes = TriggerClasses(settings)
        self.running: dict[int, asyncio.Task[None]] = {}
        self.outcomes: list[TriggerOutcome] = []
        self.fired = 0
        self._store = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="store")
        self._wake: asyncio.Event | None = None
        self._claims = 0

    # --- the loop -------------------------------------------------------------------------

    def run_forever(self, stop: threading.Event | None = None) -> None:
        """Run until ``stop``; the triggerer's job row (its health) beats from the loop itself,
        so a loop that stalls reads as unhealthy, and ends with it."""
        if self.settings.metrics_enabled:
            start_flushing(self.url, self.settings.metrics_flush_seconds)
        heart = Heart(self.url, JobKind.TRIGGERER, self.settings.job_heartbeat_seconds)
        with heart.start():
            asyncio.run(self.main(stop or threading.Event(), heart))

    async def main(self, stop: threading.Event, heart: Heart | None = None) -> None:
        set_cross_dag(StoreCrossDag(self.url))
        set_lookups(StoreLookups(self.url))
        self._wake = asyncio.Event()
        watch = BlockWatch(threading.get_ident(), self.block_threshold, log)
        watch.start()
        ticker = asyncio.create_task(watch.tick())
        log.info(
            "triggerer %s started: capacity %d, token %s…", self.id, self.capacity, self.token[:8]
        )
        next_claim = next_beat = 0.0
        try:
            while not stop.is_set():
                await self._turn(next_claim, next_beat)
                if heart is not None:
                    await asyncio.to_thread(heart.beat_if_due)
                set_gauge("triggerer_triggers_running", len(self.running))
                now = time.monotonic()
                if now >= next_beat:
                    next_beat = now + self.beat_seconds
                if now >= next_claim:
                    next_claim = now + self.claim_seconds
                await self._wait(min(next_claim, next_beat) - time.monotonic())
        finally:
            ticker.cancel()
            watch.stop()
            await self._stop_all()

    async def _turn(self, next_claim: float, next_beat: float) -> None:
        try:
            await self._record()
            now = time.monotonic()
            if now >= next_beat:
                await self._beat()
            if now >= next_claim:
                await self._time_out()
                await self._claim()
        except Exception as error:  # an outage of the store: the next turn tries again
            log.warning("triggerer turn failed: %s", one_line_error(error))

    async def _wait(self, seconds: float) -> None:
        assert self._wake is not None
        if self.outcomes:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout=max(0.0, seconds))
        self._wake.clear()

    async def store(self, call: Callable[..., T], *args: Any) -> T:
        """``call(session, *args)`` in a transaction, on the store's thread."""

        def in_transaction() -> T:
            with session_scope(self.url) as session:
                return call(session, *args)

        return await asyncio.get_running_loop().run_in_executor(self._store, in_transaction)

    # --- claims, beats, timeouts ----------------------------------------------------------

    async def _claim(self) -> None:
        room = self.capacity - len(self.running)
        if room <= 0:
            return
        stale = utcnow() - dt.timedelta(seconds=self.threshold)
        claimed = await self.store(claim_triggers, self.id, self.token, room, stale)
        for trigger in claimed:
            self._start(trigger)
        if claimed:
            log.info("claimed %d trigger(s); running %d", len(claimed), len(self.running))

    async def _beat(self) -> None:
        ids = list(self.running)
        if not ids:
            return
        held = await self.store(beat_triggers, self.token, ids)
        for trigger_id in set(ids) - held:
            task = self.running.pop(trigger_id, None)
            if task is not None:
                log.info("trigger %d is no longer this triggerer's: cancelled", trigger_id)
                task.cancel()

    async def _time_out(self) -> None:
        self._claims += 1
        if self._claims % DROP_EVERY == 1:  # a write: not every turn (SQLite has one writer)
            dropped = await self.store(drop_stale_triggers)
            if dropped:
                log.info("dropped %d trigger(s) whose task instance no longer waits", dropped)
        for timed_out in await self.store(time_out_deferrals):
            log.warning(
                "%s.%s (%s): %s",
                timed_out.dag_id,
                timed_out.task_id,
                timed_out.run_id,
                timed_out.error,
            )

    async def _record(self) -> None:
        if not self.outcomes:
            return
        outcomes, self.outcomes = self.outcomes, []
        _moved, refused = await self.store(fire_triggers, self.token, outcomes)
        self.fired += len(outcomes) - refused
        if refused:
            log.warning(
                "%d trigger event(s) refused: this triggerer no longer holds their triggers",
                refused,
            )

    # --- running triggers -----------------------------------------------------------------

    def _start(self, claimed: ClaimedTrigger) -> None:
        name = f"trigger {claimed.id} {claimed.classpath}"
        task = asyncio.create_task(self._run(claimed), name=name)
        self.running[claimed.id] = task

    def _emit(self, outcome: TriggerOutcome) -> None:
        self.outcomes.append(outcome)
        assert self._wake is not None
        self._wake.set()

    async def _run(self, claimed: ClaimedTrigger) -> None:
        trigger: BaseTrigger | None = None
        try:
            trigger = await self._build(claimed)
            trigger.trigger_id = claimed.id
            async with contextlib.aclosing(trigger.run()) as events:  # type: ignore[type-var]
                async for event in events:
                    self._emit(TriggerOutcome(claimed.id, _payload(event)))
                    if claimed.ti_id is not None:
                        return  # a deferred try wakes once
            if claimed.ti_id is not None:
                self._emit(TriggerOutcome(claimed.id, error=_ended(claimed)))
        except asyncio.CancelledError:
            raise
        except Exception as error:
            line = f"trigger {claimed.classpath} failed: {one_line_error(error)}"
            log.error("trigger %d: %s", claimed.id, line)
            self._emit(TriggerOutcome(claimed.id, error=line))
        finally:
            if self.running.get(claimed.id) is asyncio.current_task():
                del self.running[claimed.id]
            if trigger is not None:
                await _clean_up(trigger, claimed.id)

    async def _build(self, claimed: ClaimedTrigger) -> BaseTrigger:
        """The trigger, built here when its module is loaded already; else on a thread (a DAG
        file's import must not hold the loop)."""
        if self.classes.ready(claimed.classpath):
            return self.classes.build(claimed.classpath, claimed.kwargs)
        return await asyncio.get_running_loop().run_in_executor(
            None, self.classes.build, claimed.classpath, claimed.kwargs
        )

    async def _stop_all(self) -> None:
        tasks = list(self.running.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.running.clear()
        try:
            await self._record()
            released = await self.store(release_triggers, self.token)
            log.info("triggerer %s stopped: %d trigger(s) released", self.id, released)
        except Exception as error:
            log.warning("triggerer stopping: could not release its triggers: %s", error)
        self._store.shutdown(wait=True)


def _payload(event: Any) -> Any:
    if not isinstance(event, TriggerEvent):
        raise TypeError(f"run() yielded {type(event).__name__}, not a TriggerEvent")
    return encode_kwargs(event.payload)


def _ended(claimed: ClaimedTrigger) -> str:
    return f"trigger {claimed.classpath} ended without an event"


async def _clean_up(trigger: BaseTrigger, trigger_id: int) -> None:
    try:
        await trigger.cleanup()
    except Exception as error:
        log.warning("trigger %d: cleanup() failed: %s", trigger_id, one_line_error(error))
