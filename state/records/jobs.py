"""Jobs: each long-running component registers in the store and heartbeats there.

A scheduler, a Celery worker, a triggerer, an API server and the scheduler's DAG processor each
``register_job`` one row when their process starts (Airflow's ``job`` table: type, host, pid,
start, latest heartbeat, state), ``beat_job`` it every ``TRADEWIND_JOB_HEARTBEAT_SECONDS`` and
``end_job`` it on a clean exit (``success``, or ``failed`` when it stops on an error). Alive is
derived, never stored: a row in state ``running`` whose heartbeat is younger than the reader's
``TRADEWIND_JOB_HEALTH_THRESHOLD_SECONDS``. A process SIGKILLed leaves its row running; its
heartbeat ages and it reads as unhealthy once past the threshold, with no sweeper involved.

A component keeps its row beating with a ``Heart``, in one line::

    heart = keep_beating(settings.sql_url, JobKind.TRIGGERER, settings.job_heartbeat_seconds)
    try:
        run_the_triggerer()
    finally:
        heart.stop()                      # the row ends: state success, end_date now

or as a context manager (``with keep_beating(...):``, ``failed`` if the block raises). That
beats from a daemon thread: it says the process lives. A loop whose own progress is the health
to report beats from the loop instead: ``Heart(...).start()``, then ``heart.beat_if_due()`` on
each turn (the scheduler does), or, in asyncio, ``asyncio.create_task(heart.beat_in_loop())``,
which beats on the event loop (each write on a worker thread, so the loop never waits on the
store) and so stops beating while a trigger blocks the loop. A store that is away costs one
warning line, not one per beat; a row that is gone (cleaned) is registered again.

Rows older than ``RETENTION`` (by heartbeat) are deleted when a job registers, so the table
holds about a week of process starts.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import getpass
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass
from enum import StrEnum
from types import TracebackType

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from state.core import STORE_ERRORS, Job, OutageLog, session_scope, utcnow

log = logging.getLogger("tradewind.jobs")

#: Rows whose last heartbeat is older than this are deleted when any job registers.
RETENTION = dt.timedelta(days=7)
HEALTHY = "healthy"
UNHEALTHY = "unhealthy"


class JobKind(StrEnum):
    SCHEDULER = "scheduler"
    WORKER = "worker"
    TRIGGERER = "triggerer"
    API_SERVER = "api_server"
    DAG_PROCESSOR = "dag_processor"


class JobState(StrEnum):
    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"


#: Airflow's ``job_type`` names, accepted wherever a person names a kind.
AIRFLOW_JOB_TYPES = {
    "SchedulerJob": JobKind.SCHEDULER,
    "TriggererJob": JobKind.TRIGGERER,
    "DagProcessorJob": JobKind.DAG_PROCESSOR,
}


def job_kind(text: str) -> JobKind:
    """The kind ``text`` names (ours or Airflow's ``SchedulerJob``...); ValueError otherwise."""
    if text in AIRFLOW_JOB_TYPES:
        return AIRFLOW_JOB_TYPES[text]
    try:
        return JobKind(text)
    except ValueError:
        names = ", ".join([*JobKind, *AIRFLOW_JOB_TYPES])
        raise ValueError(f"unknown job type {text!r}: one of {names}") from None


def this_host() -> str:
    """The host name jobs register under (what ``--local`` matches): the container's, in one."""
    return socket.gethostname()


def register_job(
    session: Session, kind: JobKind, name: str | None = None, now: dt.datetime | None = None
) -> int:
    """Add this process's row, running and beating as of ``now``; returns its id."""
    now = now or utcnow()
    session.execute(delete(Job).where(Job.latest_heartbeat < now - RETENTION))
    job = Job(
        job_type=str(kind),
        state=str(JobState.RUNNING),
        hostname=this_host(),
        pid=os.getpid(),
        unixname=_unixname(),
        name=name,
        start_date=now,
        latest_heartbeat=now,
    )
    session.add(job)
    session.flush()
    return job.id


def _unixname() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a uid with no passwd entry (some containers)
        return None


def beat_job(session: Session, job_id: int, now: dt.datetime | None = None) -> bool:
    """Record a heartbeat; False when the row is gone or no longer running."""
    result = session.execute(
        update(Job)
        .where(Job.id == job_id, Job.state == str(JobState.RUNNING))
        .values(latest_heartbeat=now or utcnow())
    )
    return bool(getattr(result, "rowcount", 0))


def end_job(
    session: Session,
    job_id: int,
    state: JobState = JobState.SUCCESS,
    now: dt.datetime | None = None,
) -> None:
    """Mark the job ended (a clean exit: ``success``; stopped by an error: ``failed``)."""
    now = now or utcnow()
    session.execute(
        update(Job)
        .where(Job.id == job_id, Job.state == str(JobState.RUNNING))
        .values(state=str(state), end_date=now, latest_heartbeat=now)
    )


def is_alive(job: Job, threshold: dt.timedelta, now: dt.datetime) -> bool:
    return job.state == JobState.RUNNING and now - job.latest_heartbeat < threshold


def alive_jobs(
    session: Session,
    kind: JobKind | None,
    threshold: dt.timedelta,
    hostname: str | None = None,
    limit: int = 1,
) -> list[Job]:
    """The running jobs of ``kind`` (None: any) with the latest heartbeats (at most ``limit``;
    0: all), kept if alive (``airflow jobs check``'s reading)."""
    query = (
        select(Job).where(Job.state == str(JobState.RUNNING)).order_by(Job.latest_heartbeat.desc())
    )
    if kind is not None:
        query = query.where(Job.job_type == str(kind))
    if hostname is not None:
        query = query.where(Job.hostname == hostname)
    if limit > 0:
        query = query.limit(limit)
    now = utcnow()
    return [job for job in session.scalars(query) if is_alive(job, threshold, now)]


@dataclass(frozen=True)
class KindHealth:
    """One kind's health as Airflow's ``/monitor/health`` reads it: from its most recent job
    (running ones first). ``status`` is None when no job of the kind ever registered."""

    kind: JobKind
    status: str | None
    latest_heartbeat: dt.datetime | None


def kinds_health(session: Session, threshold: dt.timedelta) -> dict[JobKind, KindHealth]:
    """Every kind's health, from one grouped statement over the type-and-heartbeat index."""
    running = Job.state == str(JobState.RUNNING)
    query = select(Job.job_type, running, func.max(Job.latest_heartbeat)).group_by(
        Job.job_type, running
    )
    latest: dict[str, dict[bool, dt.datetime]] = {}
    for job_type, is_running, heartbeat in session.execute(query):
        latest.setdefault(job_type, {})[bool(is_running)] = heartbeat
    now = utcnow()
    return {kind: _health(kind, latest.get(str(kind), {}), threshold, now) for kind in JobKind}


def _health(
    kind: JobKind, latest: dict[bool, dt.datetime], threshold: dt.timedelta, now: dt.datetime
) -> KindHealth:
    if not latest:
        return KindHealth(kind, None, None)
    if True in latest:
        heartbeat = latest[True]
        return KindHealth(kind, HEALTHY if now - heartbeat < threshold else UNHEALTHY, heartbeat)
    return KindHealth(kind, UNHEALTHY, latest[False])


def recent_jobs(session: Session, since: dt.datetime, per_kind: int) -> dict[JobKind, list[Job]]:
    """The running jobs of each kind that beat since ``since``, latest first, ``per_kind`` at
    most (one statement): what the UI's home lists, the dead ones among them for a while."""
    rank = (
        func.row_number()
        .over(partition_by=Job.job_type, order_by=Job.latest_heartbeat.desc())
        .label("rank")
    )
    ranked = (
        select(Job.id, rank)
        .where(Job.state == str(JobState.RUNNING), Job.latest_heartbeat >= since)
        .subquery()
    )
    query = (
        select(Job)
        .join(ranked, ranked.c.id == Job.id)
        .where(ranked.c.rank <= per_kind)
        .order_by(Job.job_type, Job.latest_heartbeat.desc())
    )
    found: dict[JobKind, list[Job]] = {kind: [] for kind in JobKind}
    for job in session.scalars(query):
        if job.job_type in found:
            found[JobKind(job.job_type)].append(job)
    return found


class Heart:
    """One component's job row, kept beating (see the module's docstring for the three ways)."""

    def __init__(
        self, url: str, kind: JobKind, interval_seconds: float, name: str | None = None
    ) -> None:
        self.url, self.kind, self.name = url, kind, name
        self.interval_seconds = interval_seconds
        self.job_id: int | None = None
        self._next_beat = 0.0  # time.monotonic() of the next beat due
        self._lock = threading.Lock()  # a beat and the stop never interleave
        self._stopped = threading.Event()
        self._outage = OutageLog(f"{kind} heartbeat", log)

    def start(self) -> Heart:
        """Register now (or at the first beat, if the store is away)."""
        self.beat_now()
        return self

    def beat_if_due(self) -> None:
        if time.monotonic() >= self._next_beat:
            self.beat_now()

    def beat_now(self) -> None:
        with self._lock:
            if self._stopped.is_set():
                return
            self._next_beat = time.monotonic() + self.interval_seconds
            try:
                self._beat()
            except STORE_ERRORS as error:
                self._outage.failed(error, time.monotonic())
                return
            self._outage.recovered(time.monotonic())

    def _beat(self) -> None:
        with session_scope(self.url) as session:
            if self.job_id is not None and beat_job(session, self.job_id):
                return
            if self.job_id is not None:
                log.warning(
                    "%s job %s was ended or removed: registering again", self.kind, self.job_id
                )
            self.job_id = register_job(session, self.kind, self.name)
        log.info("%s registered as job %s on %s", self.kind, self.job_id, this_host())

    def beat_in_thread(self) -> Heart:
        """Beat from a daemon thread until ``stop``."""
        threading.Thread(
            target=self._beat_until_stopped, name=f"{self.kind}-heart", daemon=True
        ).start()
        return self

    def _beat_until_stopped(self) -> None:
        while not self._stopped.wait(max(0.0, self._next_beat - time.monotonic())):
            self.beat_now()

    async def beat_in_loop(self) -> None:
        """Beat on the running event loop until cancelled or stopped (each write on a thread)."""
        while not self._stopped.is_set():
            await asyncio.to_thread(self.beat_now)
            await asyncio.sleep(self.interval_seconds)

    def stop(self, state: JobState = JobState.SUCCESS) -> None:
        """End the row (no beat after this one); a store that is away leaves it to age out."""
        with self._lock:
            self._stopped.set()
            if self.job_id is None:
                return
            try:
                with session_scope(self.url) as session:
                    end_job(session, self.job_id, state)
            except STORE_ERRORS as error:
                log.warning(
                    "%s job %s: could not record its end: %s", self.kind, self.job_id, error
                )

    def __enter__(self) -> Heart:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _: TracebackType | None
    ) -> None:
        clean = error is None or isinstance(error, KeyboardInterrupt | SystemExit)
        self.stop(JobState.SUCCESS if clean else JobState.FAILED)


def keep_beating(
    url: str, kind: JobKind, interval_seconds: float, name: str | None = None
) -> Heart:
    """Register a ``kind`` job for this process and beat it from a daemon thread until ``stop``."""
    return Heart(url, kind, interval_seconds, name).start().beat_in_thread()
