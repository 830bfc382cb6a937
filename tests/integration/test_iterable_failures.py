"""Iterable tasks under real failures, on PostgreSQL with real processes.

- the supervisor and its task process are killed with SIGKILL in the middle of a 5,000-item
  iteration: the retry runs again only the items of the unwritten rounds (and those that were
  running), and the downstream task reads every result exactly once, in order;
- PostgreSQL refuses the checkpoint writes for a moment (the test holds a table lock and the
  store's ``lock_timeout`` is short): the rounds are written with the next one, nothing lost;
- the store cannot be read at the start of a retry: the task instance fails before any item.

The worker side is ``worker.supervisor.execute.execute`` in a forked process (what a Celery pool
process runs for a message); the scheduler's part is called directly.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import func, select

from state.core.db import forget_engines_after_fork, get_engine, session_scope
from state.core.enums import DagRunState, TaskInstanceState
from state.core.models import TaskInstance, TaskStateValue, XCom, utcnow
from state.engine.liveness import dag_tasks, give_up_try
from tests.worker.iterable_support import Stack, message_of
from worker.supervisor.execute import execute

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]
PG_DATABASE_PREFIX = "tw_iterable_"
TI = TaskInstanceState
ITEMS = 5000
CONCURRENCY = 16

DAG = """
import asyncio
import time
from pathlib import Path
from tradewind import dag, task, get_current_context

CALLS = Path(__CALLS__)
FAIL_IN_TRY_1 = __FAIL__
LOCKED = Path(__CALLS__ + ".locked")


@task
def numbers():
    return list(range(__ITEMS__))


@task(task_concurrency=__CONCURRENCY__, retries=2, retry_delay=0)
__ASYNC__def work(x):
    with CALLS.open("a") as out:
        out.write(f"{x}\\n")
    __SLEEP__
    # Held until a test that locks the store says it holds the lock (the marker file), so the
    # iteration cannot end before the lock is taken, however slow the locker is to start.
    while __HOLD__ and x == 200 and not LOCKED.exists():
        time.sleep(0.01)
    if x in FAIL_IN_TRY_1 and get_current_context()["ti"].try_number == 1:
        raise ValueError(f"item {x} fails its first try")
    return x * 3


@task
def collect(values):
    return values


@dag(dag_id="many_items")
def many_items():
    collect(work.iterate(x=numbers()))


many_items()
"""


@pytest.fixture
def stack(tmp_path: Path, pg_url: str) -> Iterator[Stack]:
    stack = Stack(tmp_path, url=pg_url)
    yield stack
    get_engine(pg_url).dispose()


def add_dag(
    stack: Stack, fail: set[int] | None = None, threads: bool = False, hold: bool = False
) -> None:
    """``threads``: ``work`` is a plain function (a thread pool); else ``async def``.

    ``hold``: item 200 waits for the marker file ``calls.locked``, with a blocking sleep (for
    ``async def`` items that holds the whole loop: nothing more finishes until the lock is
    taken, by when a dozen rounds are written).
    """
    replacements = {
        "__ASYNC__": "" if threads else "async ",
        "__SLEEP__": "time.sleep(0.002)" if threads else "await asyncio.sleep(0.002)",
        "__CALLS__": repr(str(stack.home / "calls")),
        "__FAIL__": repr(fail or set()),
        "__ITEMS__": str(ITEMS),
        "__CONCURRENCY__": str(CONCURRENCY),
        "__HOLD__": repr(hold),
    }
    source = DAG
    for name, value in replacements.items():
        source = source.replace(name, value)
    stack.add_dag("many_items", source)


def calls(stack: Stack) -> list[int]:
    path = stack.home / "calls"
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def batch_count(url: str) -> int:
    with session_scope(url) as session:
        query = select(func.count()).where(TaskStateValue.key.like("_iterable_batch_%"))
        return int(session.scalar(query) or 0)


def start_first_try(stack: Stack) -> int:
    """Trigger, run ``numbers``; ``work``'s first try is left queued."""
    run_pk = stack.trigger("many_items")
    stack.schedule(run_pk)
    stack.execute_queued(stop_after=("numbers", 1))
    assert [enqueue.task_id for enqueue in stack.queued] == ["work"]
    return run_pk


def children_of(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(child) for child in text.split()]


@pytest.mark.parametrize("threads", [False, True], ids=["event-loop", "threads"])
def test_a_sigkill_mid_iteration_reruns_only_the_unwritten_rounds(
    stack: Stack, threads: bool
) -> None:
    add_dag(stack, threads=threads)
    run_pk = start_first_try(stack)
    message = message_of(stack.queued.pop(0))
    worker = os.fork()
    if worker == 0:  # pragma: no cover - the worker process, killed below
        forget_engines_after_fork()
        try:
            execute(message, stack.settings, lambda ready: None)
        finally:
            os._exit(0)
    deadline = time.monotonic() + 120
    while batch_count(stack.url) < 60 and time.monotonic() < deadline:
        time.sleep(0.02)
    tasks = children_of(worker)
    os.kill(worker, signal.SIGKILL)
    for task_pid in tasks:
        os.killpg(task_pid, signal.SIGKILL)  # the task process has a group of its own
    os.waitpid(worker, 0)
    written = batch_count(stack.url)
    written_indexes = set(stored_indexes(stack.url))
    first_try = calls(stack)
    assert 60 <= written < ITEMS // CONCURRENCY, "the kill must land mid-iteration"

    # The scheduler's zombie rule ends the dead try; the retry runs in this process.
    with session_scope(stack.url) as session:
        ti = session.scalars(select(TaskInstance).where(TaskInstance.task_id == "work")).one()
        tasks_spec = dag_tasks(session, "many_items")
        assert give_up_try(session, ti, "zombie", utcnow(), tasks_spec) == TI.UP_FOR_RETRY
    assert stack.run_to_end(run_pk, seconds=180) == DagRunState.SUCCESS

    again = {x for x, n in Counter(calls(stack)).items() if n > 1}
    # Exactly what started in the first try without reaching a written round: the round not
    # yet written and the items then running; nothing of a written round runs again.
    assert again == set(first_try) - written_indexes
    assert len(again) <= 3 * CONCURRENCY
    replayed = ITEMS - (len(calls(stack)) - len(first_try))
    assert replayed == len(written_indexes)
    retry_log = stack.log_of("work", 2)
    assert f"{ITEMS} items: {replayed} finished in earlier tries" in retry_log
    assert xcom(stack, "collect") == [x * 3 for x in range(ITEMS)]


def xcom(stack: Stack, task_id: str) -> object:
    with session_scope(stack.url) as session:
        value = session.scalars(select(XCom.value).where(XCom.task_id == task_id)).one()
    return json.loads(value)


LOCKER = """
import sys, time, psycopg
url, hold, wait_for, marker = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
with psycopg.connect(url) as poll:
    while True:
        count = poll.execute(
            "SELECT count(*) FROM task_state WHERE key LIKE '_iterable_batch_%'"
        ).fetchone()[0]
        poll.commit()
        if count >= wait_for:
            break
        time.sleep(0.005)
with psycopg.connect(url) as lock:
    lock.execute("LOCK TABLE task_state IN ACCESS EXCLUSIVE MODE")
    print("locked", flush=True)
    open(marker, "w").close()
    time.sleep(hold)
    lock.rollback()
print("released", flush=True)
"""


def with_lock_timeout(stack: Stack, pg_url: str) -> None:
    """The store gives up on a lock after 100 ms, as a busy database would refuse a write."""
    stack.settings.database_url = pg_url + "?options=-c%20lock_timeout%3D100"


def test_writes_refused_for_a_moment_are_written_with_the_next_round(
    stack: Stack, pg_url: str
) -> None:
    add_dag(stack, fail={ITEMS - 1}, hold=True)  # a failure keeps the batches for the test
    run_pk = start_first_try(stack)
    with_lock_timeout(stack, pg_url)
    marker = str(stack.home / "calls.locked")
    locker = subprocess.Popen(
        [sys.executable, "-c", LOCKER, pg_url, "1.0", "5", marker],
        stdout=subprocess.PIPE,
        text=True,
    )
    stack.execute_queued(stop_after=("work", 1))
    output, _ = locker.communicate(timeout=60)

    assert output.split() == ["locked", "released"]
    log = stack.log_of("work", 1)
    assert "not written, kept for the next one" in log
    indexes = stored_indexes(stack.url)
    assert sorted(indexes) == list(range(ITEMS))  # every outcome once, none lost
    assert stack.run_to_end(run_pk, seconds=120) == DagRunState.SUCCESS
    assert calls(stack).count(ITEMS - 1) == 2
    assert len(calls(stack)) == ITEMS + 1
    assert xcom(stack, "collect") == [x * 3 for x in range(ITEMS)]


def stored_indexes(url: str) -> list[int]:
    with session_scope(url) as session:
        rows = session.execute(
            select(TaskStateValue.key, TaskStateValue.value).where(
                TaskStateValue.key.like("_iterable_batch_%")
            )
        ).all()
    numbers = sorted(int(key.rsplit("_", 1)[1]) for key, _ in rows)
    assert numbers == list(range(len(numbers))), "batch numbers without a gap"
    return [entry["i"] for _, value in rows for entry in json.loads(value)["outcomes"]]


def test_a_retry_that_cannot_read_the_store_fails_before_any_item(
    stack: Stack, pg_url: str
) -> None:
    add_dag(stack, fail={7})
    run_pk = start_first_try(stack)
    stack.execute_queued(stop_after=("work", 1))
    assert stack.ti_state("work") in (TI.UP_FOR_RETRY, TI.QUEUED)
    first_try = len(calls(stack))
    with_lock_timeout(stack, pg_url)
    stack.schedule(run_pk)

    with psycopg.connect(pg_url) as lock:
        lock.execute("LOCK TABLE task_state IN ACCESS EXCLUSIVE MODE")
        stack.execute_queued(stop_after=("work", 2))
        lock.rollback()

    assert len(calls(stack)) == first_try
    log = stack.log_of("work", 2)
    assert "lock timeout" in log
    assert "items:" not in log
    assert stack.ti_state("work") in (TI.UP_FOR_RETRY, TI.QUEUED)  # try 3 is left
