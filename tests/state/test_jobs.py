"""Jobs and heartbeats (state/records/jobs.py) on SQLite and PostgreSQL.

Times are passed in, never waited for: a job is made old by beating it in the past.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import delete, select

from state.core import Job, session_scope, utcnow
from state.records import (
    HEALTHY,
    UNHEALTHY,
    Heart,
    JobKind,
    JobState,
    alive_jobs,
    beat_job,
    end_job,
    job_kind,
    keep_beating,
    kinds_health,
    recent_jobs,
    register_job,
    this_host,
)
from tests.aio import run as run_async
from tests.state.harness import tradewind_home

THRESHOLD = dt.timedelta(seconds=30)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def store(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    env = {}
    if request.param == "postgresql":
        env["database_url"] = request.getfixturevalue("pg_url")
    with tradewind_home(tmp_path, monkeypatch, **env) as home:
        yield home.url


def _register(
    url: str, kind: JobKind, at: dt.datetime | None = None, name: str | None = None
) -> int:
    with session_scope(url) as session:
        return register_job(session, kind, name, now=at)


def _job(url: str, job_id: int) -> Job:
    with session_scope(url) as session:
        job = session.get(Job, job_id)
        assert job is not None
        return job


def test_a_registered_job_names_its_host_process_and_kind_and_is_running(store: str) -> None:
    job_id = _register(store, JobKind.WORKER, name="w1@here")
    job = _job(store, job_id)
    assert (job.job_type, job.state, job.hostname, job.pid) == (
        "worker",
        "running",
        this_host(),
        os.getpid(),
    )
    assert job.name == "w1@here" and job.end_date is None
    assert job.latest_heartbeat == job.start_date


def test_a_beat_moves_the_heartbeat_and_an_ended_job_takes_no_beat(store: str) -> None:
    started = utcnow() - dt.timedelta(minutes=5)
    job_id = _register(store, JobKind.SCHEDULER, at=started)
    later = started + dt.timedelta(seconds=5)
    with session_scope(store) as session:
        assert beat_job(session, job_id, now=later)
    assert _job(store, job_id).latest_heartbeat == later
    with session_scope(store) as session:
        end_job(session, job_id, JobState.FAILED)
        assert not beat_job(session, job_id)
    ended = _job(store, job_id)
    assert ended.state == "failed" and ended.end_date is not None
    with session_scope(store) as session:
        assert not beat_job(session, 10_000)  # no such row


def test_health_of_each_kind_follows_airflows_reading(store: str) -> None:
    now = utcnow()
    with session_scope(store) as session:
        never = kinds_health(session, THRESHOLD)
    assert {kind: health.status for kind, health in never.items()} == dict.fromkeys(JobKind)

    fresh = _register(store, JobKind.SCHEDULER, at=now - dt.timedelta(seconds=2))
    _register(store, JobKind.SCHEDULER, at=now - dt.timedelta(minutes=10))  # killed long ago
    stale_worker = _register(store, JobKind.WORKER, at=now - dt.timedelta(minutes=2))
    gone = _register(store, JobKind.TRIGGERER, at=now - dt.timedelta(minutes=1))
    with session_scope(store) as session:
        end_job(session, gone, now=now - dt.timedelta(seconds=1))
        health = kinds_health(session, THRESHOLD)

    assert health[JobKind.SCHEDULER].status == HEALTHY
    assert health[JobKind.SCHEDULER].latest_heartbeat == _job(store, fresh).latest_heartbeat
    assert health[JobKind.WORKER].status == UNHEALTHY  # running, but silent past the threshold
    assert health[JobKind.WORKER].latest_heartbeat == _job(store, stale_worker).latest_heartbeat
    # Ended cleanly, none running: unhealthy, with the ended job's last heartbeat.
    assert health[JobKind.TRIGGERER].status == UNHEALTHY
    assert health[JobKind.TRIGGERER].latest_heartbeat == now - dt.timedelta(seconds=1)
    assert health[JobKind.API_SERVER].status is None


def test_alive_jobs_reads_the_latest_running_ones_of_a_kind_and_host(store: str) -> None:
    now = utcnow()
    older = _register(store, JobKind.WORKER, at=now - dt.timedelta(seconds=10))
    newer = _register(store, JobKind.WORKER, at=now - dt.timedelta(seconds=1))
    _register(store, JobKind.WORKER, at=now - dt.timedelta(minutes=5))  # SIGKILLed
    with session_scope(store) as session:
        assert [job.id for job in alive_jobs(session, JobKind.WORKER, THRESHOLD)] == [newer]
        both = alive_jobs(session, JobKind.WORKER, THRESHOLD, limit=0)
        assert [job.id for job in both] == [newer, older]
        assert alive_jobs(session, JobKind.WORKER, THRESHOLD, hostname="elsewhere", limit=0) == []
        assert len(alive_jobs(session, None, THRESHOLD, hostname=this_host(), limit=0)) == 2
        assert alive_jobs(session, JobKind.SCHEDULER, THRESHOLD) == []


def test_recent_jobs_lists_a_bounded_number_per_kind_latest_first(store: str) -> None:
    now = utcnow()
    ids = [_register(store, JobKind.WORKER, at=now - dt.timedelta(seconds=s)) for s in (3, 1, 2)]
    _register(store, JobKind.WORKER, at=now - dt.timedelta(hours=3))  # beyond the window
    with session_scope(store) as session:
        shown = recent_jobs(session, now - dt.timedelta(hours=1), per_kind=2)
    assert [job.id for job in shown[JobKind.WORKER]] == [ids[1], ids[2]]
    assert shown[JobKind.SCHEDULER] == []


def test_registering_deletes_rows_silent_for_over_a_week(store: str) -> None:
    ancient = _register(store, JobKind.WORKER, at=utcnow() - dt.timedelta(days=8))
    _register(store, JobKind.WORKER)
    with session_scope(store) as session:
        assert session.get(Job, ancient) is None


def test_a_heart_beats_in_a_thread_and_ends_its_job_when_stopped(store: str) -> None:
    heart = keep_beating(store, JobKind.API_SERVER, interval_seconds=0.05)
    assert heart.job_id is not None
    first = _job(store, heart.job_id).latest_heartbeat
    deadline = utcnow() + dt.timedelta(seconds=30)
    while _job(store, heart.job_id).latest_heartbeat == first:
        assert utcnow() < deadline, "the heart's thread never beat"
    heart.stop()
    job = _job(store, heart.job_id)
    assert job.state == "success" and job.end_date is not None
    heart.beat_now()  # stopped: no beat, no new row
    with session_scope(store) as session:
        assert session.scalars(select(Job.id)).all() == [heart.job_id]


def test_a_heart_whose_row_was_removed_registers_again(store: str) -> None:
    heart = Heart(store, JobKind.SCHEDULER, 5.0).start()
    first = heart.job_id
    with session_scope(store) as session:
        session.execute(delete(Job))
    heart.beat_now()
    assert heart.job_id is not None and heart.job_id != first
    assert _job(store, heart.job_id).state == "running"
    heart.stop()


def test_a_heart_used_as_a_context_ends_failed_when_its_block_raises(store: str) -> None:
    with pytest.raises(RuntimeError), Heart(store, JobKind.SCHEDULER, 5.0).start() as heart:
        raise RuntimeError("the loop broke")
    assert heart.job_id is not None and _job(store, heart.job_id).state == "failed"


def test_a_heart_beats_on_an_event_loop(store: str) -> None:
    heart = Heart(store, JobKind.TRIGGERER, 0.01)

    async def beat_a_while() -> None:
        task = asyncio.create_task(heart.beat_in_loop())
        while (
            heart.job_id is None
            or _job(store, heart.job_id).latest_heartbeat == _job(store, heart.job_id).start_date
        ):
            await asyncio.sleep(0.01)
        task.cancel()

    run_async(beat_a_while())
    heart.stop()
    assert heart.job_id is not None and _job(store, heart.job_id).state == "success"


def test_a_heart_waits_out_a_store_that_is_not_there(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite:///{tmp_path / 'missing' / 'no.db'}"  # its folder does not exist
    heart = Heart(url, JobKind.WORKER, 5.0).start()
    heart.beat_now()
    assert heart.job_id is None
    assert sum("unavailable" in record.getMessage() for record in caplog.records) == 1
    heart.stop()


def test_kinds_are_named_as_tradewind_or_airflow_names_them() -> None:
    assert job_kind("scheduler") is JobKind.SCHEDULER
    assert job_kind("SchedulerJob") is JobKind.SCHEDULER
    assert job_kind("TriggererJob") is JobKind.TRIGGERER
    with pytest.raises(ValueError, match="unknown job type 'LocalTaskJob': one of scheduler"):
        job_kind("LocalTaskJob")
