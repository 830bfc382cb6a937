"""Tradewind's real processes on the lab's hosts, and what the observer reads back.

A worker host runs ``celery -A worker worker`` and a scheduler host ``tradewind scheduler``, each
inside its namespace (``ip netns exec``) with its own ``TRADEWIND_HOME``, pointed at the store
host's address. The observer (this process) triggers runs and reads their state through the
store's Unix sockets, and reads the bodies' records (``dags/hosts_dags.py``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labstore import Store
from netlab import Lab, Popen
from sqlalchemy import select

from scheduler.dag_sync import sync_dags
from state.core.db import get_engine, session_scope
from state.core.migrate import upgrade
from state.core.models import DagRun, TaskInstance
from state.engine.runs import create_run

ROOT = Path(__file__).resolve().parents[2]
DAGS = Path(__file__).with_name("dags")
FINISHED = ("success", "failed")

#: Short enough that a fault plays out in seconds; the zombie threshold is several heartbeats.
FAULT_SETTINGS = {
    "TRADEWIND_HEARTBEAT_SECONDS": "0.5",
    "TRADEWIND_ZOMBIE_THRESHOLD_SECONDS": "4",
    "TRADEWIND_TASK_QUEUED_TIMEOUT_SECONDS": "30",
    "TRADEWIND_SCHEDULER_INTERVAL_SECONDS": "0.5",
    "TRADEWIND_KILL_GRACE_SECONDS": "1",
}


@dataclass
class HostsFleet:
    """The store's database, set up, and the Tradewind processes started on the lab's hosts."""

    lab: Lab
    store: Store
    folder: Path
    settings: dict[str, str] = field(default_factory=lambda: dict(FAULT_SETTINGS))
    dags: Path = DAGS
    started: dict[str, Popen] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.records_file.touch()
        upgrade(self.url)
        with session_scope(self.url) as session:
            sync_dags(session, self.dags)

    @property
    def url(self) -> str:
        return self.store.observer_database_url

    @property
    def records_file(self) -> Path:
        return self.folder / "records.jsonl"

    def env(self, host: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRADEWIND_")}
        env.update(
            self.settings,
            TRADEWIND_DATABASE_URL=self.store.database_url,
            TRADEWIND_BROKER_URL=self.store.broker_url,
            TRADEWIND_HOME=str(self.folder / host),
            TRADEWIND_DAGS_FOLDER=str(self.dags),
            TWH_HOST=host,
            TWH_RECORDS=str(self.records_file),
            PYTHONPATH=str(ROOT),
            PYTHONUNBUFFERED="1",
        )
        return env

    def start_worker(self, host: str, concurrency: int = 1) -> Popen:
        argv = [sys.executable, "-m", "celery", "-A", "worker", "worker",
                "-c", str(concurrency), "-n", f"{host}@{self.lab.tag}", "--loglevel", "INFO",
                "--without-gossip", "--without-mingle"]  # fmt: skip
        return self._start(host, argv)

    def start_scheduler(self, host: str) -> Popen:
        return self._start(host, [sys.executable, "-m", "cli", "scheduler"])

    def _start(self, host: str, argv: list[str]) -> Popen:
        self.started[host] = self.lab.start(host, argv, self.env(host), self.log_path(host))
        return self.started[host]

    def log_path(self, host: str) -> Path:
        return self.folder / f"{host}.log"

    def log(self, host: str) -> str:
        return self.log_path(host).read_text(errors="replace")

    def wait_workers_ready(self, *hosts: str) -> None:
        for host in hosts:
            wait_for(lambda h=host: "ready." in self.log(h), f"worker {host} ready", timeout=90)

    def trigger(self, dag_id: str, run_id: str, conf: dict[str, Any] | None = None) -> None:
        with session_scope(self.url) as session:
            create_run(session, dag_id, run_id=run_id, conf=conf)

    def run_states(self, dag_id: str) -> dict[str, str]:
        with session_scope(self.url) as session:
            runs = session.scalars(select(DagRun).filter_by(dag_id=dag_id))
            return {run.run_id: str(run.state) for run in runs}

    def wait_runs(self, dag_id: str, run_ids: list[str], timeout: float = 120) -> dict[str, str]:
        """Wait until every run has ended; their states, or AssertionError naming the others."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = self.run_states(dag_id)
            if all(states.get(run_id) in FINISHED for run_id in run_ids):
                return {run_id: states[run_id] for run_id in run_ids}
            time.sleep(0.3)
        unfinished = {r: s for r, s in self.run_states(dag_id).items() if s not in FINISHED}
        raise AssertionError(f"runs not ended after {timeout}s: {unfinished}; see {self.folder}")

    def task_instances(self, dag_id: str, run_id: str | None = None) -> list[TaskInstance]:
        query = select(TaskInstance).filter_by(dag_id=dag_id)
        if run_id is not None:
            query = query.filter_by(run_id=run_id)
        with session_scope(self.url) as session:
            return list(session.scalars(query))

    def records(self) -> list[dict[str, Any]]:
        lines = self.records_file.read_text().splitlines()
        return [json.loads(line) for line in lines if line]

    def close(self) -> None:
        """Stop this fleet's processes (the store stays) and close this process's pool."""
        for process in self.started.values():
            self.lab.stop(process)
        self.started.clear()
        get_engine(self.url).dispose()


def wait_for(predicate: Callable[[], object], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def body_spans(records: list[dict[str, Any]]) -> dict[tuple[str, int, str], tuple[float, float]]:
    """(task instance, try, host) -> (first, last) record time of that body."""
    spans: dict[tuple[str, int, str], tuple[float, float]] = {}
    for row in records:
        key = (row["ti"], row["try"], row["host"])
        first, last = spans.get(key, (row["t"], row["t"]))
        spans[key] = (min(first, row["t"]), max(last, row["t"]))
    return spans


def overlaps(records: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    """Pairs of bodies of one task instance whose spans overlap in time."""
    by_ti: dict[str, list[tuple[tuple[str, int, str], tuple[float, float]]]] = {}
    for key, span in body_spans(records).items():
        by_ti.setdefault(key[0], []).append((key, span))
    found = []
    for bodies in by_ti.values():
        bodies.sort(key=lambda body: body[1][0])
        longest = bodies[0]  # of the bodies started so far, the one that ended last
        for later in bodies[1:]:
            if later[1][0] < longest[1][1]:
                found.append((longest, later))
            if later[1][1] > longest[1][1]:
                longest = later
    return found


def starts_per_try(records: list[dict[str, Any]]) -> dict[tuple[str, int], int]:
    """How many bodies started for each (task instance, try)."""
    counts: dict[tuple[str, int], int] = {}
    for row in records:
        if row["phase"] == "start":
            key = (row["ti"], row["try"])
            counts[key] = counts.get(key, 0) + 1
    return counts
