"""A store, a DAG folder and a run, driven by hand: what the iterable-task tests share.

``Stack`` holds a migrated database, a DAG folder and the settings pointing at both; it can
trigger a run, queue what is ready and run each queued try through
``worker.supervisor.execute.execute`` (a real forked task process, a real supervisor), as a worker
would.
"""

from __future__ import annotations

import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select

from broker_config import message_of
from scheduler.dag_sync import sync_dags
from state.core.db import session_scope
from state.core.enums import DagRunState, TaskInstanceState
from state.core.models import DagRun, TaskInstance
from state.engine.runs import create_run
from state.engine.scheduling import Enqueue, schedule_run_by_pk
from state.engine.try_life import HeldTry, claim_try
from tests.stores import migrated
from tradewind.settings import Settings
from worker.supervisor.execute import execute


@dataclass
class Stack:
    """A database and a DAG folder under ``home``."""

    home: Path
    url: str = ""
    queued: list[Enqueue] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.url = self.url or f"sqlite:///{self.home / 'tradewind.db'}"
        self.dags = self.home / "dags"
        self.dags.mkdir(parents=True, exist_ok=True)
        migrated(self.url)
        self.settings = Settings(
            home=self.home, database_url=self.url, dags_folder=self.dags, kill_grace_seconds=1.0
        )

    def add_dag(self, name: str, source: str) -> Path:
        path = self.dags / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        with session_scope(self.url) as session:
            sync_dags(session, self.dags)
        return path

    def trigger(self, dag_id: str, run_id: str = "r1") -> int:
        with session_scope(self.url) as session:
            return create_run(session, dag_id, run_id).id

    def schedule(self, run_pk: int) -> list[Enqueue]:
        with session_scope(self.url) as session:
            ready = schedule_run_by_pk(session, run_pk)
        self.queued += ready
        return ready

    def claim(self, enqueue: Enqueue) -> HeldTry:
        with session_scope(self.url) as session:
            claim = claim_try(session, message_of(enqueue))
        assert isinstance(claim, HeldTry), claim
        return claim

    def execute_queued(self, stop_after: tuple[str, int] | None = None) -> list[str]:
        """Run every queued try (those the supervisors queue downstream included).

        ``stop_after=(task_id, try_number)``: return once that try ran, the rest left queued.
        """
        states = []
        while self.queued:
            enqueue = self.queued.pop(0)
            states.append(execute(message_of(enqueue), self.settings, self.queued.extend))
            if stop_after == (enqueue.task_id, enqueue.try_number):
                break
        return states

    def run_to_end(self, run_pk: int, seconds: float = 60.0) -> DagRunState:
        """Schedule and execute until the run ends, as a scheduler loop would."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not self.schedule(run_pk) and not self.queued:
                time.sleep(0.05)  # a retry waiting for its retry_delay
            self.execute_queued()
            state = self.run_state(run_pk)
            if state in (DagRunState.SUCCESS, DagRunState.FAILED):
                return state
        raise AssertionError(f"run {run_pk} did not end in {seconds:g}s")

    def run_state(self, run_pk: int) -> DagRunState:
        with session_scope(self.url) as session:
            run = session.get(DagRun, run_pk)
            assert run is not None
            return DagRunState(run.state)

    def task_instances(self, task_id: str) -> list[TaskInstance]:
        with session_scope(self.url) as session:
            query = (
                select(TaskInstance)
                .where(TaskInstance.task_id == task_id)
                .order_by(TaskInstance.map_index)
            )
            return list(session.scalars(query))

    def ti_state(self, task_id: str, map_index: int = -1) -> TaskInstanceState:
        states = {ti.map_index: ti.state for ti in self.task_instances(task_id)}
        return TaskInstanceState(states[map_index])

    def log_of(self, task_id: str, try_number: int, map_index: int = -1) -> str:
        folder = self.settings.logs_folder
        paths = list(folder.glob(f"*/*/{task_id}/{map_index}/{try_number}.log"))
        assert len(paths) == 1, paths
        return paths[0].read_text()


ITERATE_DAG = """
from pathlib import Path
from tradewind import dag, task, get_current_context, SkipTask

FOLDER = Path(__FOLDER__)
FAILS = __FAILS__  # try number -> the items that fail in that try


def note(name, index):
    with open(FOLDER / name, "a") as out:
        out.write(f"{index}\\n")


def on_item_success(context):
    note("callbacks", context["item_index"])


@task
def numbers():
    return list(range(20))


@task(
    retries=1,
    retry_delay=0,
    task_concurrency=__CONCURRENCY__,
    fail_fast=__FAIL_FAST__,
    on_success_callback=on_item_success,
)
def square(x, task_state_store=None):
    ti = get_current_context()["ti"]
    note("calls", x)
    task_state_store.set("tries", task_state_store.get("tries", []) + [ti.try_number])
    if x in FAILS.get(ti.try_number, ()):
        raise ValueError(f"item {x} fails in try {ti.try_number}")
    return x * x


@task
def collect(values):
    return values


@dag(dag_id="iterate_dag")
def iterate_dag():
    collect(square.iterate(x=numbers()))


iterate_dag()
"""


def add_iterate_dag(
    stack: Stack,
    fail: set[int] | None = None,
    fails: dict[int, set[int]] | None = None,
    concurrency: int = 4,
    fail_fast: bool = False,
) -> None:
    """The DAG above; ``fail``: the items that fail their first try."""
    replacements = {
        "__FOLDER__": repr(str(stack.home)),
        "__FAILS__": repr(fails if fails is not None else {1: fail or set()}),
        "__CONCURRENCY__": str(concurrency),
        "__FAIL_FAST__": repr(fail_fast),
    }
    source = ITERATE_DAG
    for name, value in replacements.items():
        source = source.replace(name, value)
    stack.add_dag("iterate_dag", source)
