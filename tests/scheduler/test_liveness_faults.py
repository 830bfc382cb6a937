"""Fault injection: silent supervisors, lost messages and tasks that kill their worker.

The scheduler ends what stopped moving (and runs the failure callback of a try it fails for
good); a supervisor that comes back after that writes nothing; a message delivered again and
again with no try ending is failed after ``max_deliveries`` deliveries, counted in SQL.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import select, update

from broker_config import message_of
from scheduler import loop
from scheduler.loop import Scheduler
from state.core.db import session_scope
from state.core.enums import TaskInstanceState
from state.core.models import DagRun, TaskInstance, XCom, utcnow
from state.engine.end import record_end
from state.engine.liveness import give_up_try
from state.engine.outcomes import Failed
from state.engine.scheduling import Enqueue
from state.engine.try_life import HeldTry, claim_try, judge
from tests.state.harness import Home, tradewind_home

TI = TaskInstanceState
ROOT = Path(__file__).resolve().parents[2]

DAGS = """
import json, time
from pathlib import Path
from tradewind import dag, task

OUT = Path({out!r})

def remember(context):
    line = {{"task": context["ti"].task_id, "try": context["ti"].try_number,
             "error": str(context["exception"])}}
    with open(OUT / "callbacks.jsonl", "a") as f:
        f.write(json.dumps(line) + "\\n")

@task(retries={retries}, retry_delay=0, on_failure_callback=remember)
def work():
    (OUT / "started").write_text("yes")
    time.sleep({sleep})
    return "late"

@dag(dag_id="lively")
def lively():
    work()

lively()
"""

STUB_APP = SimpleNamespace(main="stub")


@pytest.fixture
def make_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Home]]:
    """``make_home(retries=..., sleep=...)``: a home whose one DAG has one such task."""
    env = {"heartbeat_seconds": "0.2", "zombie_threshold_seconds": "1", "max_queued_resends": "1"}
    with contextlib.ExitStack() as stack:

        def make(**dag: Any) -> Home:
            home = stack.enter_context(tradewind_home(tmp_path, monkeypatch, **env))
            home.write_dag(DAGS.format(out=str(tmp_path), **{"retries": 0, "sleep": 0, **dag}))
            return home

        yield make


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[Enqueue]:
    sent: list[Enqueue] = []
    monkeypatch.setattr(loop, "publish_many", lambda app, ready: sent.extend(ready))
    return sent


def first_try(home: Home, published: list[Enqueue]) -> tuple[Scheduler, Enqueue]:
    scheduler = Scheduler(home.settings, app=STUB_APP)  # type: ignore[arg-type]
    home.sync()
    home.trigger("lively", run_id="r1")
    scheduler.run_once()
    [enqueue] = published
    published.clear()
    return scheduler, enqueue


def callbacks(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "callbacks.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines]


def backdate(home: Home, ti_id: int, **columns: dt.datetime) -> None:
    with session_scope(home.url) as session:
        session.execute(update(TaskInstance).where(TaskInstance.id == ti_id).values(**columns))


def _only_ti(home: Home) -> TaskInstance:
    with session_scope(home.url) as session:
        return session.scalars(select(TaskInstance)).one()


@pytest.mark.parametrize("retries", [0, 1])
def test_a_zombie_failed_for_good_gets_its_failure_callback(
    make_home: Callable[..., Home], tmp_path: Path, published: list[Enqueue], retries: int
) -> None:
    home = make_home(retries=retries)
    scheduler, enqueue = first_try(home, published)
    with session_scope(home.url) as session:
        assert isinstance(claim_try(session, message_of(enqueue)), HeldTry)
    backdate(home, enqueue.ti_id, last_heartbeat=utcnow() - dt.timedelta(seconds=5))

    assert scheduler.run_once().zombies == 1

    ti = _only_ti(home)
    if retries:  # a retry is coming: no failure callback yet
        assert ti.state == TI.UP_FOR_RETRY
        assert callbacks(tmp_path) == []
    else:
        assert ti.state == TI.FAILED
        [called] = callbacks(tmp_path)
        assert called == {"task": "work", "try": 1, "error": "zombie: no heartbeat for over 1s"}
    scheduler.run_once()  # a second sweep finds nothing more to do
    assert len(callbacks(tmp_path)) == 1 - retries


def test_a_lost_message_is_resent_without_a_try_then_failed_with_its_callback(
    make_home: Callable[..., Home], tmp_path: Path, published: list[Enqueue]
) -> None:
    home = make_home()
    scheduler, enqueue = first_try(home, published)
    timeout = dt.timedelta(seconds=home.settings.task_queued_timeout_seconds + 1)
    backdate(home, enqueue.ti_id, queued_at=utcnow() - timeout)
    assert scheduler.run_once().resent == 1
    assert published == [enqueue]  # the same try: none consumed
    assert (_only_ti(home).try_number, _only_ti(home).queued_resends) == (1, 1)

    backdate(home, enqueue.ti_id, queued_at=utcnow() - timeout)
    assert scheduler.run_once().resent == 0
    ti = _only_ti(home)
    assert (ti.state, ti.try_number) == (TI.FAILED, 1)
    [called] = callbacks(tmp_path)
    assert called["error"] == "queued too long: its message was sent 2 times, never started"


def test_deliveries_with_no_try_ending_are_bounded(
    make_home: Callable[..., Home], tmp_path: Path, published: list[Enqueue]
) -> None:
    """Celery redelivers a message whose worker died; each copy counts, across tries."""
    home = make_home(retries=5)
    scheduler, enqueue = first_try(home, published)
    limit = home.settings.max_deliveries
    assert limit == 3

    def deliver(enqueue: Enqueue) -> HeldTry | str:
        with session_scope(home.url) as session:
            return claim_try(session, message_of(enqueue), limit)

    def worker_dies(enqueue: Enqueue) -> None:
        backdate(home, enqueue.ti_id, last_heartbeat=utcnow() - dt.timedelta(seconds=5))
        assert scheduler.run_once().zombies == 1  # the zombie rule ends the try...
        scheduler.run_once()  # ...and the next loop queues the retry

    assert isinstance(deliver(enqueue), HeldTry)  # try 1 starts and kills its worker...
    assert "stale or duplicate" in str(deliver(enqueue))  # ...whose message comes back
    assert _only_ti(home).deliveries == 2
    worker_dies(enqueue)
    [second] = published
    assert isinstance(deliver(second), HeldTry)  # try 2: the third delivery
    refused = deliver(second)  # the fourth, with no try ended: failed
    assert isinstance(refused, str) and "delivered 4 times" in refused
    ti = _only_ti(home)
    assert (ti.state, ti.try_number, ti.deliveries) == (TI.FAILED, 2, 4)
    assert ti.error is not None and "keeps killing the worker" in ti.error


def test_a_try_that_ends_starts_the_delivery_count_over(
    make_home: Callable[..., Home], tmp_path: Path, published: list[Enqueue]
) -> None:
    home = make_home(retries=5)
    _, enqueue = first_try(home, published)
    for _ in range(5):  # five tries that each fail normally: no bound applies
        with session_scope(home.url) as session:
            claim = claim_try(session, message_of(enqueue), 1)
            assert isinstance(claim, HeldTry)
            assert record_end(session, judge(claim, Failed("boom"), utcnow()))
        enqueue = _requeue(home)
    assert _only_ti(home).deliveries == 0


def _run_pk(home: Home) -> int:
    with session_scope(home.url) as session:
        return session.scalars(select(DagRun.id)).one()


def _requeue(home: Home) -> Enqueue:
    backdate(home, _only_ti(home).id, next_retry_at=utcnow() - dt.timedelta(seconds=1))
    [enqueue] = home.schedule(_run_pk(home))
    return enqueue


SUPERVISE = """
import json, sys
from broker_config import TaskInstanceMessage
from tradewind.settings import get_settings
from worker.supervisor.execute import execute
message = TaskInstanceMessage.model_validate(json.loads(sys.argv[1]))
print(execute(message, get_settings(), publish=lambda ready: None), flush=True)
"""


def supervise_elsewhere(enqueue: Enqueue, out: Path) -> subprocess.Popen[str]:
    """A supervisor of ``enqueue``'s try in a process of its own, once its task has started."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    message = json.dumps(message_of(enqueue).model_dump())
    supervisor = subprocess.Popen(
        [sys.executable, "-c", SUPERVISE, message], env=env, stdout=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 20
    while not (out / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return supervisor


@pytest.mark.timeout(60)
def test_a_paused_supervisor_resumed_after_the_zombie_rule_writes_nothing(
    make_home: Callable[..., Home], tmp_path: Path, published: list[Enqueue]
) -> None:
    home = make_home(sleep=1.5)
    scheduler, enqueue = first_try(home, published)
    supervisor = supervise_elsewhere(enqueue, tmp_path)
    try:
        os.kill(supervisor.pid, signal.SIGSTOP)  # the task itself runs on, in its own group
        time.sleep(home.settings.zombie_threshold_seconds + 0.5)
        assert scheduler.run_once().zombies == 1
        time.sleep(1.5)  # the task has finished and asked to store its result
        os.kill(supervisor.pid, signal.SIGCONT)
        out, _ = supervisor.communicate(timeout=30)
    finally:
        supervisor.kill()
    assert out.strip().splitlines()[-1] == "lost"
    ti = _only_ti(home)
    assert (ti.state, ti.try_number) == (TI.FAILED, 1)
    assert ti.error == "zombie: no heartbeat for over 1s"
    with session_scope(home.url) as session:
        assert session.scalars(select(XCom)).all() == []  # "late" was never stored
    # The scheduler ran the callback when it failed the try. (The task process, stopped with
    # SIGTERM in the middle of a request, cannot ask whether its try still holds, and may run it
    # again; a task stopped anywhere else asks: the next test.)
    assert callbacks(tmp_path)[0]["error"] == "zombie: no heartbeat for over 1s"


@pytest.mark.timeout(60)
def test_a_task_killed_because_its_try_was_given_up_does_not_run_the_callback_again(
    make_home: Callable[..., Home], tmp_path: Path, published: list[Enqueue]
) -> None:
    home = make_home(sleep=30)
    _, enqueue = first_try(home, published)
    supervisor = supervise_elsewhere(enqueue, tmp_path)
    try:
        # What the zombie rule does (the scheduler then runs the callback itself): the try is
        # failed under its live supervisor, which learns it at its next heartbeat.
        with session_scope(home.url) as session:
            ti = session.get_one(TaskInstance, enqueue.ti_id)
            assert give_up_try(session, ti, "given up", utcnow(), {}) == TI.FAILED
        out, _ = supervisor.communicate(timeout=30)
    finally:
        supervisor.kill()
    assert out.strip().splitlines()[-1] == "lost"
    assert callbacks(tmp_path) == []  # the task's failure report was refused: no callback
