"""Heartbeats of a real fleet: health through Airflow's own client, ``tradewind jobs check``.

A scheduler, a Celery worker (prefork: its pool processes must not register) and an API server
run on PostgreSQL + Redis with a short health threshold. Health reads healthy through
``apache-airflow-client``; a worker stopped with SIGTERM ends its job; a scheduler SIGKILLed
reads unhealthy once its heartbeat is older than the threshold, and a scheduler stopped with
SIGTERM ends its job as success.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import airflow_client.client as airflow
import pytest
from sqlalchemy import select
from typer.testing import CliRunner, Result

from cli.main import app
from state.core import Job, session_scope
from tests.integration.conftest import Fleet
from tradewind.settings import reload_settings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]
TRADEWIND = [sys.executable, "-m", "cli"]
SHORT = {"TRADEWIND_JOB_HEARTBEAT_SECONDS": "0.5", "TRADEWIND_JOB_HEALTH_THRESHOLD_SECONDS": "3"}


def _run_check(fleet: Fleet, *options: str) -> subprocess.CompletedProcess[str]:
    """``tradewind jobs check`` as a probe runs it: a process of its own."""
    command = [*TRADEWIND, "jobs", "check", *options]
    return subprocess.run(command, env=fleet.env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def check(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Result]]:
    """``check(fleet, *options)``: ``tradewind jobs check`` in this process, with the fleet's
    settings (a process each costs seconds on a busy machine)."""

    def invoke(fleet: Fleet, *options: str) -> Result:
        for name, value in fleet.env.items():
            if name.startswith("TRADEWIND_"):
                monkeypatch.setenv(name, value)
        reload_settings()
        return CliRunner().invoke(app, ["jobs", "check", *options])

    yield invoke
    monkeypatch.undo()
    reload_settings()


def _jobs(fleet: Fleet, kind: str) -> list[Job]:
    with session_scope(fleet.url) as session:
        return list(session.scalars(select(Job).where(Job.job_type == kind).order_by(Job.id)))


def _health(monitor: airflow.MonitorApi) -> Any:
    return monitor.get_health()


def test_health_and_jobs_check_follow_the_fleets_heartbeats(
    make_fleet: Any, check: Callable[..., Result]
) -> None:
    fleet: Fleet = make_fleet(**SHORT)
    scheduler = fleet.start_scheduler()
    worker = fleet.start_worker(pool="prefork", concurrency=2)
    base = fleet.start_api()
    monitor = airflow.MonitorApi(airflow.ApiClient(airflow.Configuration(host=base)))

    def all_beat() -> bool:
        health = _health(monitor)
        return bool(
            health.scheduler.status == "healthy"
            and health.dag_processor.status == "healthy"
            and _jobs(fleet, "worker")
            and _jobs(fleet, "api_server")
        )

    fleet.wait_for(all_beat, 60, "the scheduler, DAG processor, worker and API server to beat")
    health = _health(monitor)
    assert health.metadatabase.status == "healthy"
    assert health.scheduler.latest_scheduler_heartbeat is not None
    assert health.triggerer.status is None  # no triggerer ever ran: as Airflow answers
    assert health.triggerer.latest_triggerer_heartbeat is None

    # One row for the worker, from its own process: the prefork pool's children never register.
    (worker_job,) = _jobs(fleet, "worker")
    assert (worker_job.pid, worker_job.name) == (worker.pid, f"w1@{socket.gethostname()}")
    (scheduler_job,) = _jobs(fleet, "scheduler")
    assert scheduler_job.pid == scheduler.pid

    alive = _run_check(fleet, "--job-type", "scheduler", "--local")
    assert (alive.returncode, alive.stdout.strip()) == (0, "found one alive job"), alive.stderr
    none = _run_check(fleet, "--job-type", "triggerer")
    assert (none.returncode, none.stderr.strip()) == (1, "error: no alive jobs found")
    for kind in ("SchedulerJob", "worker", "api_server", "dag_processor"):
        found = check(fleet, "--job-type", kind, "--local")
        assert (found.exit_code, found.stdout.strip()) == (0, "found one alive job"), found.output
    assert check(fleet, "--job-type", "worker", "--hostname", "no-such-host").exit_code == 1
    several = check(fleet, "--limit", "0")
    assert several.exit_code == 1 and "expected only one" in several.output
    assert check(fleet, "--limit", "0", "--allow-multiple").stdout.startswith("found 4 alive")
    wrong = check(fleet, "--job-type", "LocalTaskJob")
    assert wrong.exit_code == 2
    assert wrong.output.strip().startswith("error: --job-type: unknown job type 'LocalTaskJob'")
    assert check(fleet, "--local", "--hostname", "x").exit_code == 2

    # A worker's warm shutdown ends its row.
    os.killpg(worker.pid, signal.SIGTERM)
    worker.wait(60)
    (ended,) = _jobs(fleet, "worker")
    assert ended.state == "success" and ended.end_date is not None
    assert check(fleet, "--job-type", "worker").exit_code == 1

    # SIGKILL: the row stays running, and reads unhealthy once its heartbeat is too old.
    os.killpg(scheduler.pid, signal.SIGKILL)
    scheduler.wait(30)
    fleet.wait_for(
        lambda: _health(monitor).scheduler.status == "unhealthy", 60, "the scheduler unhealthy"
    )
    assert _jobs(fleet, "scheduler")[0].state == "running"
    killed = _run_check(fleet, "--job-type", "scheduler")
    assert (killed.returncode, killed.stderr.strip()) == (1, "error: no alive jobs found")

    # A scheduler stopped with SIGTERM ends its row (and its DAG processor's) as success.
    second = fleet.start_scheduler("scheduler2")
    fleet.wait_for(lambda: _health(monitor).scheduler.status == "healthy", 60, "a new scheduler")
    os.killpg(second.pid, signal.SIGTERM)
    assert second.wait(60) == 0
    newest = [job for job in _jobs(fleet, "scheduler") if job.pid == second.pid]
    assert [job.state for job in newest] == ["success"]
    processors = [job for job in _jobs(fleet, "dag_processor") if job.pid == second.pid]
    assert [job.state for job in processors] == ["success"]
