"""The triggerer's loop in this process, on SQLite: a trigger class from the DAGs folder is
built as the worker loads DAG files, its event resumes the deferred try, and a trigger that
holds the loop is named in the log."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from state.core.enums import TaskInstanceState
from state.engine.outcomes import Deferred
from tests.state.harness import Home, end_claimed, tradewind_home
from tests.state.test_deferral import claim, schedule
from triggerer import Triggerer

TI = TaskInstanceState

DAG_SOURCE = '''
import asyncio, time
from tradewind import DAG, BaseTrigger, Connection, TriggerEvent, Variable, task

class Sleepy(BaseTrigger):
    """Holds the loop with a blocking sleep before its event: what the watch must name."""

    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds

    def serialize(self):
        return (f"{type(self).__module__}.Sleepy", {"seconds": self.seconds})

    async def run(self):
        await asyncio.sleep(0.2)
        time.sleep(self.seconds)
        yield TriggerEvent({"slept": self.seconds})

class Lookup(BaseTrigger):
    """As a provider's trigger: its hook reads a connection (and a variable), and it logs."""

    def serialize(self):
        return (f"{type(self).__module__}.Lookup", {})

    async def run(self):
        connection = await asyncio.to_thread(Connection.get, "web")
        self.log.info("polling %s", connection.host)
        value = await asyncio.to_thread(Variable.get, "v")
        yield TriggerEvent({"host": connection.host, "v": value})

@task
def wait():
    return 1

with DAG("sleepy"):
    wait()
'''


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    with tradewind_home(tmp_path, monkeypatch, heartbeat_seconds="0.2") as made:
        made.write_dag(DAG_SOURCE, "sleepy.py")
        assert made.sync().import_errors == {}
        yield made


def test_a_dag_folder_trigger_resumes_its_try_and_blocking_the_loop_is_named(
    home: Home, caplog: pytest.LogCaptureFixture
) -> None:
    path = (home.dags / "sleepy.py").resolve()
    module = f"tradewind_dags_sleepy_{hashlib.sha1(str(path).encode()).hexdigest()[:12]}"
    run_pk = home.trigger("sleepy")
    [first] = schedule(home, run_pk)
    held = claim(home, first)
    deferral = Deferred(f"{module}.Sleepy", {"seconds": 0.6}, "execute", {})
    assert end_claimed(home.url, held, deferral).recorded

    triggerer = Triggerer(home.settings, claim_seconds=0.1)
    stop = threading.Event()
    thread = threading.Thread(target=triggerer.run_forever, args=(stop,))
    caplog.set_level(logging.INFO, logger="tradewind.triggerer")
    thread.start()
    try:
        for _ in range(200):
            if home.ti(run_pk, "wait").state == TI.SCHEDULED:
                break
            stop.wait(0.05)
    finally:
        stop.set()
        thread.join(timeout=30)
    ti = home.ti(run_pk, "wait")
    assert ti.state == TI.SCHEDULED and ti.try_number == 0  # queuing adds back the same try
    assert ti.next_kwargs == {"event": {"slept": 0.6}}
    held_loop = [
        r.getMessage() for r in caplog.records if "has held the triggerer's loop" in r.getMessage()
    ]
    assert held_loop and f"({module}.Sleepy, at " in held_loop[0]
    assert "trigger 1 " in held_loop[0] and "sleepy.py" in held_loop[0]


SLOW_SOURCE = """
import time
from tradewind import DAG, BaseTrigger, task

time.sleep(0.3)  # the class is defined only after this: a half-made module before


class Late(BaseTrigger):
    def __init__(self, n):
        super().__init__()
        self.n = n

    def serialize(self):
        return (f"{type(self).__module__}.Late", {"n": self.n})

    async def run(self):
        yield None

with DAG("late"):
    task(lambda: 1, task_id="t")()
"""


def test_triggers_of_one_dag_file_built_at_once_wait_for_its_whole_load(home: Home) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from triggerer.classes import TriggerClasses

    home.write_dag(SLOW_SOURCE, "late.py")
    path = (home.dags / "late.py").resolve()
    module = f"tradewind_dags_late_{hashlib.sha1(str(path).encode()).hexdigest()[:12]}"
    classes = TriggerClasses(home.settings)
    with ThreadPoolExecutor(6) as pool:
        built = list(pool.map(lambda n: classes.build(f"{module}.Late", {"n": n}), range(6)))
    assert sorted(trigger.n for trigger in built) == list(range(6))  # type: ignore[attr-defined]
    assert classes.ready(f"{module}.Late")


def test_a_triggerer_registers_its_job_beats_it_and_ends_it(home: Home) -> None:
    from sqlalchemy import select

    from state.core.db import session_scope
    from state.core.models import Job

    stop = threading.Event()
    runner = threading.Thread(target=Triggerer(home.settings).run_forever, args=(stop,))
    runner.start()
    try:
        for _ in range(200):
            with session_scope(home.url) as session:
                rows = session.execute(select(Job).filter_by(job_type="triggerer")).scalars()
                jobs = [(job.state, job.latest_heartbeat is not None) for job in rows]
            if jobs:
                break
            stop.wait(0.05)
        assert jobs == [("running", True)]
    finally:
        stop.set()
        runner.join(timeout=30)
    with session_scope(home.url) as session:
        ended = session.execute(select(Job.state).filter_by(job_type="triggerer")).scalars()
        assert list(ended) == ["success"]


def test_a_trigger_reads_connections_and_variables_from_the_store_and_logs(
    home: Home, caplog: pytest.LogCaptureFixture
) -> None:
    """What a provider's trigger does (``HttpSensorTrigger`` builds its async hook from
    ``http_conn_id``): outside a task, the triggerer answers ``Connection.get``."""
    from state.core.db import session_scope
    from state.records import put_connection, set_variable

    with session_scope(home.url) as session:
        put_connection(session, "web", conn_type="http", host="fruit.example")
        set_variable(session, "v", "apple")
    path = (home.dags / "sleepy.py").resolve()
    module = f"tradewind_dags_sleepy_{hashlib.sha1(str(path).encode()).hexdigest()[:12]}"
    run_pk = home.trigger("sleepy")
    [first] = schedule(home, run_pk)
    assert end_claimed(
        home.url, claim(home, first), Deferred(f"{module}.Lookup", {}, "execute", {})
    ).recorded

    triggerer = Triggerer(home.settings, claim_seconds=0.1)
    stop = threading.Event()
    thread = threading.Thread(target=triggerer.run_forever, args=(stop,))
    caplog.set_level(logging.INFO)
    thread.start()
    try:
        for _ in range(200):
            if home.ti(run_pk, "wait").state != TI.DEFERRED:
                break
            stop.wait(0.05)
    finally:
        stop.set()
        thread.join(timeout=30)
    ti = home.ti(run_pk, "wait")
    assert (ti.state, ti.error) == (TI.SCHEDULED, None)
    assert ti.next_kwargs == {"event": {"host": "fruit.example", "v": "apple"}}
    assert "polling fruit.example" in caplog.messages
