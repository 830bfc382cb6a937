"""The scheduler loop: sync DAGs, create due runs, schedule every active run, rescue what stopped.

In ``run_forever`` the DAG sync runs on a thread of its own: the files are imported in child
processes (``tradewind/dag_processor.py``), and a file that takes its whole
``TRADEWIND_DAG_FILE_PROCESSOR_TIMEOUT`` delays only the sync, never the scheduling of the DAGs
already stored. ``run_once`` alone (the tests, ``bench/``) syncs first, in line.

Each run is scheduled in its own short transaction holding its row lock (``FOR UPDATE SKIP
LOCKED``), so several schedulers share the work without a global lock; messages are published
only after the transaction that queued them commits, and failure callbacks run only after the
transaction that failed their try commits.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from celery import Celery
from kombu.exceptions import OperationalError as BrokerUnavailable

from broker_config import make_celery_app, publish_many
from scheduler.asset_runs import create_asset_triggered_runs
from scheduler.callbacks import LostTry, failure_callback_in_child
from scheduler.dag_sync import sync_dags
from scheduler.retention import Retention
from scheduler.run_watch import RunWatch
from scheduler.timed_runs import create_due_runs, due_dags
from state.core import (
    STORE_ERRORS,
    DagModel,
    OutageLog,
    TaskInstance,
    TaskInstanceState,
    count_metric,
    is_store_outage,
    observe_metric,
    session_scope,
    start_flushing,
    utcnow,
)
from state.engine import (
    Enqueue,
    Purgers,
    RunWakeups,
    TimedOutQuestion,
    dag_tasks,
    fail_queued,
    find_stalled_queued,
    find_zombies,
    give_up_try,
    resend_queued,
    time_out_questions,
    time_out_run,
    timed_out_runs,
    try_schedule_run,
    waits_on_past,
)
from state.records import Heart, JobKind, purge_expired_states
from tradewind.dag_processor import ProcessorLimits, StoredDag
from tradewind.loader import dag_files
from tradewind.settings import Settings

log = logging.getLogger("tradewind.scheduler")
#: How long a stopping scheduler waits for its DAG sync to finish (and end its job row).
SYNC_STOP_SECONDS = 5.0


@dataclass
class LoopStats:
    runs: int = 0
    queued: int = 0
    resent: int = 0
    zombies: int = 0
    created: int = 0


@dataclass
class Scheduler:
    settings: Settings
    app: Celery | None = None
    #: The DAGs as the last sync parsed them: structures and files, no code.
    dags: dict[str, StoredDag] = field(default_factory=dict)
    _files_seen: dict[str, float] = field(default_factory=dict)
    _watch: RunWatch = field(default_factory=RunWatch)
    # An outage is one line when it starts and one when it ends, not one per loop.
    _store: OutageLog = field(default_factory=lambda: OutageLog("scheduler", log))
    _broker: OutageLog = field(
        default_factory=lambda: OutageLog("scheduler", log, service="the broker")
    )
    #: Tries queued in SQL whose message could not be sent (the broker was away): sent first
    #: thing each loop, rather than left to the queued rescue a minute later.
    _unsent: list[Enqueue] = field(default_factory=list)
    #: True while ``run_forever``'s sync thread keeps the DAGs in sync (``run_once`` does not).
    _syncing_apart: bool = False
    #: What deletes the objects of the XComs and state values the history retention deletes.
    purgers: Purgers = field(default_factory=Purgers)

    def __post_init__(self) -> None:
        if self.app is None:
            self.app = make_celery_app(
                self.settings.broker,
                self.settings.broker_folder,
                sent_events=self.settings.task_sent_events,
            )
        self.url = self.settings.sql_url
        self.retention = Retention(self.settings, self.purgers)

    def run_forever(self, stop: threading.Event | None = None) -> None:
        """Loop until ``stop``; the scheduler's job row beats from the loop itself, so a loop
        that hangs reads as unhealthy, and ends with it (``failed`` if the loop raised)."""
        stop = stop or threading.Event()
        if self.settings.metrics_enabled:
            start_flushing(self.url, self.settings.metrics_flush_seconds)
        log.info("scheduler started: DAGs in %s", self.settings.resolved_dags_folder)
        heart = self._heart(JobKind.SCHEDULER).start()
        wakeups = RunWakeups(self.url)  # a run created meanwhile cuts the wait short
        wakeups.listen()
        self._syncing_apart = True
        syncing = threading.Thread(
            target=self._sync_forever, args=(stop,), name="dag-sync", daemon=True
        )
        syncing.start()
        if self.retention.enabled:  # on its own thread: a batch never delays a loop
            threading.Thread(
                target=self.retention.run_forever, args=(stop,), name="retention", daemon=True
            ).start()
        with heart:
            try:
                while not stop.is_set():
                    started = time.monotonic()
                    self._loop_once()
                    heart.beat_if_due()
                    interval = self.settings.scheduler_interval_seconds
                    wakeups.wait(max(0.0, interval - (time.monotonic() - started)), stop)
            finally:
                self._syncing_apart = False
                wakeups.close()
                stop.set()  # the sync thread too: its job ends unless a file keeps it importing
                syncing.join(timeout=SYNC_STOP_SECONDS)

    def _heart(self, kind: JobKind) -> Heart:
        return Heart(self.url, kind, self.settings.job_heartbeat_seconds)

    def _sync_forever(self, stop: threading.Event) -> None:
        """Sync the DAGs folder each interval while the loop schedules, until ``stop``; its
        ``dag_processor`` job beats between syncs."""
        with self._heart(JobKind.DAG_PROCESSOR).start() as heart:
            while not stop.is_set():
                self._sync_once()
                heart.beat_if_due()
                stop.wait(self.settings.scheduler_interval_seconds)

    def _sync_once(self) -> None:
        try:
            self.sync_if_changed()
        except STORE_ERRORS as error:
            if not is_store_outage(error):  # an outage is the loop's line to say
                log.exception("DAG sync failed; trying again")
        except Exception:
            log.exception("DAG sync failed; trying again")

    def _loop_once(self) -> None:
        """One loop; a store outage is logged once, any other failure each time, with its trace."""
        started = time.monotonic()
        try:
            self.run_once()
            observe_metric("scheduler_loop_duration_seconds", time.monotonic() - started)
        except STORE_ERRORS as error:
            if not is_store_outage(error):
                log.exception("scheduler loop failed; trying again")
                return
            self._store.failed(error, time.monotonic())
            return
        except Exception:
            log.exception("scheduler loop failed; trying again")
            return
        self._store.recovered(time.monotonic())

    def run_once(self) -> LoopStats:
        stats = LoopStats()
        self._publish([])  # what an earlier loop could not send
        if not self._syncing_apart:
            self.sync_if_changed()
        self._create_due_runs(stats)
        stats.created += len(create_asset_triggered_runs(self.url))
        self._time_out_runs()
        self._schedule_runs(stats)
        self._rescue_stalled_queued(stats)
        self._reap_zombies(stats)
        with session_scope(self.url) as session:  # housekeeping: one transaction a loop
            purge_expired_states(session)
            answered = time_out_questions(session, utcnow())
        self._say_timed_out(answered)
        return stats

    def sync_if_changed(self, force: bool = False) -> None:
        folder = self.settings.resolved_dags_folder
        seen = {str(path): path.stat().st_mtime for path in dag_files(folder)}
        if not force and seen == self._files_seen:
            return
        with session_scope(self.url) as session:
            result = sync_dags(session, Path(folder))
        self._files_seen, self.dags = seen, result.dags
        for path, error in result.import_errors.items():
            log.error("DAG file %s does not import: %s", path, error)
        for path, line in result.warnings.items():
            log.warning("DAG file %s: %s", path, line)
        if result.changed:
            log.info("DAGs updated: %s", ", ".join(sorted(result.changed)))

    def _publish(self, ready: list[Enqueue]) -> None:
        """Send ``ready`` (after what is still unsent); kept for the next loop if the broker
        is away. Queued in SQL already, so a copy sent twice is dropped by the claim."""
        # One message per try: the queued rescue may queue again a try still unsent.
        sending = list({(q.ti_id, q.try_number): q for q in [*self._unsent, *ready]}.values())
        if not sending:
            return
        try:
            publish_many(self.app, sending)
        except BrokerUnavailable as error:
            self._broker.failed(error, time.monotonic())
            self._unsent = sending
            return
        self._unsent = []
        self._broker.recovered(time.monotonic())

    def _create_due_runs(self, stats: LoopStats) -> None:
        now = utcnow()
        with session_scope(self.url) as session:
            due = due_dags(session, now)
        for dag in due:
            with session_scope(self.url) as session:
                stats.created += len(create_due_runs(session, dag, now))

    def _schedule_runs(self, stats: LoopStats) -> None:
        with session_scope(self.url) as session:
            views = self._watch.to_pass(session, utcnow())
        for view in views:
            with session_scope(self.url) as session:
                ready = try_schedule_run(session, view.run_pk)
            if ready is None:
                continue  # another process holds the run: look again next loop
            if not waits_on_past(view.run_pk):  # else its previous run may release it
                self._watch.passed(view)
            self._publish(ready)
            stats.runs += 1
            stats.queued += len(ready)

    def _time_out_runs(self) -> None:
        """Fail the runs past their DAG's ``dagrun_timeout`` (state/engine/run_life.py)."""
        now = utcnow()
        with session_scope(self.url) as session:
            expired = timed_out_runs(session, now)
        for run in expired:
            with session_scope(self.url) as session:
                if not time_out_run(session, run.run_pk, now):
                    continue  # another process holds it: looked at again next loop
            log.warning("run %s of %s timed out (dagrun_timeout): failed", run.run_id, run.dag_id)

    def _say_timed_out(self, answered: list[TimedOutQuestion]) -> None:
        """The human-in-the-loop questions the loop's housekeeping answered with their defaults
        (or a timeout error) once their timeout passed (state/engine/hitl.py)."""
        for question in answered:
            how = f"its defaults {question.defaults}" if question.defaults else "a timeout error"
            log.info(
                "%s.%s (%s): nobody answered before the timeout; resumed with %s",
                question.dag_id,
                question.task_id,
                question.run_id,
                how,
            )

    def _rescue_stalled_queued(self, stats: LoopStats) -> None:
        now = utcnow()
        cutoff = now - dt.timedelta(seconds=self.settings.task_queued_timeout_seconds)
        resend: list[Enqueue] = []
        failed: list[LostTry] = []
        with session_scope(self.url) as session:
            for ti in find_stalled_queued(session, cutoff):
                if ti.queued_resends >= self.settings.max_queued_resends:
                    sends = ti.queued_resends + 1
                    error = f"queued too long: its message was sent {sends} times, never started"
                    if fail_queued(session, ti, error, now):
                        log.error("%s.%s: %s", ti.dag_id, ti.task_id, error)
                        failed.append(_lost(ti, error))
                    continue
                resend += [Enqueue.of(row) for row in resend_queued(session, ti, now)]
        self._publish(resend)
        self._run_callbacks(failed)
        stats.resent += len(resend)

    def _reap_zombies(self, stats: LoopStats) -> None:
        now = utcnow()
        cutoff = now - dt.timedelta(seconds=self.settings.zombie_threshold_seconds)
        error = f"zombie: no heartbeat for over {self.settings.zombie_threshold_seconds:g}s"
        failed: list[LostTry] = []
        with session_scope(self.url) as session:
            for ti in find_zombies(session, cutoff):
                target = give_up_try(session, ti, error, now, dag_tasks(session, ti.dag_id))
                if target is None:
                    continue
                stats.zombies += 1
                count_metric("zombies_killed")
                count_metric("ti_finish", state=str(target))
                log.warning(
                    "%s.%s try %s: %s -> %s", ti.dag_id, ti.task_id, ti.try_number, error, target
                )
                if target == TaskInstanceState.FAILED:
                    failed.append(_lost(ti, error))
        self._run_callbacks(failed)

    def _run_callbacks(self, failed: list[LostTry]) -> None:
        limits = ProcessorLimits.of(self.settings)
        for lost in failed:
            with session_scope(self.url) as session:
                model = session.get(DagModel, lost.dag_id)
                fileloc = model.fileloc if model is not None else None
            if fileloc:  # its file, as stored: the sync may not have run in this process yet
                failure_callback_in_child(fileloc, lost, limits)


def _lost(ti: TaskInstance, error: str) -> LostTry:
    return LostTry(ti.dag_id, ti.run_id, ti.task_id, ti.map_index, ti.try_number, error)
