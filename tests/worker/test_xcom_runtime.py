"""Runtime tasks (Node.js, over the framed protocol) with an XCom backend in the helper process.

Real processes throughout: the supervisor (``worker.supervisor.execute.execute``, in this process),
the Node.js task it starts, and the helper running a test backend (``xcom_support``) that can be
made slow. What DESIGN.md §6 promises, each a test: heartbeats and ``execution_timeout`` never
wait on a backend call; a helper that dies fails its calls and the try cleanly; what an earlier
try stored is purged before the retry runs; look-ups go through the supervisor, secrets masked.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import select

from broker_config import message_of
from state.core.db import session_scope
from state.core.models import XCom
from state.engine.scheduling import Enqueue
from state.records.connections import put_connection, set_variable
from tests.state.harness import Home, tradewind_home
from tests.worker.test_supervisor import pid_gone
from tests.worker.xcom_support import Watch, watching
from tradewind.settings import reload_settings
from worker.helper.client import BackendHelper
from worker.supervisor.execute import execute
from worker.supervisor.logs import log_path
from worker.xcom.object_storage import REFERENCE_KEY

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).parent / "runtimes" / "scripted_task.js"
HEARTBEAT_SECONDS = 0.5
ZOMBIE_SECONDS = 2.5

DAGS = """
from tradewind import dag, task

@task
def produce():
    return "p" * 200

@task.runtime(command=["node", {script!r}])
def rt(upstream=None, steps=(), result=None):
    '''Runs tests/worker/runtimes/scripted_task.js.'''

@dag(dag_id="slow_push")
def slow_push():
    rt(steps=[{{"do": "push", "key": "big", "bytes": 1000}}], result="pushed")

@dag(dag_id="hanging_pull")
def hanging_pull():
    produce() >> rt.override(execution_timeout=12)(steps=[{{"do": "pull", "task": "produce"}}])

@dag(dag_id="pull")
def pull():
    produce() >> rt(steps=[{{"do": "pull", "task": "produce"}}])

@dag(dag_id="retry_purge")
def retry_purge():
    steps = [{{"do": "push", "key": "partial", "bytes": 500}}, {{"do": "fail_on_try", "try": 1}}]
    rt.override(retries=1, retry_delay=0)(steps=steps, result="done")

@dag(dag_id="arguments")
def arguments():
    rt(upstream=produce(), steps=[{{"do": "arguments"}}], result="r" * 300)

@dag(dag_id="secrets")
def secrets():
    steps = [
        {{"do": "connection", "conn_id": "warehouse"}},
        {{"do": "variable", "key": "api_token"}},
        {{"do": "mask", "value": "tok-live-98765"}},
    ]
    rt(steps=steps, result="kept")

@task
def numbers():
    return [10, 20, 30]

@task
def total(values):
    return sum(values)

@dag(dag_id="mapped")
def mapped():
    total(rt.partial(steps=[]).expand(result=numbers()))

@dag(dag_id="mapped_literal")
def mapped_literal():
    total(rt.partial(steps=[]).expand(result=[1, 2, 3]))

for build in (
    slow_push, hanging_pull, pull, retry_purge, arguments, secrets, mapped, mapped_literal
):
    build()
"""


@dataclass
class Setup:
    home: Home
    markers: Path
    monkeypatch: pytest.MonkeyPatch

    def configure(self, backend: str = "SlowBackend", **slow_seconds: float) -> None:
        self.monkeypatch.setenv("TRADEWIND_XCOM_BACKEND", f"tests.worker.xcom_support.{backend}")
        for hook, seconds in slow_seconds.items():
            self.monkeypatch.setenv(f"TW_TEST_SLOW_{hook.upper()}", str(seconds))
        self.home.settings = reload_settings()

    def marker(self, name: str) -> list[str]:
        path = self.markers / name
        return path.read_text().splitlines() if path.exists() else []

    def run(self, dag_id: str) -> tuple[int, list[str]]:
        """Trigger ``dag_id`` and run each try as it is queued; the outcomes in order."""
        run_pk = self.home.trigger(dag_id)
        pending: list[Enqueue] = self.home.schedule(run_pk)
        outcomes = []
        while pending:
            outcomes.append(execute(message_of(pending.pop(0)), self.home.settings, pending.extend))
            pending = pending or self.home.schedule(run_pk)
        return run_pk, outcomes

    def log(self, run_pk: int, task_id: str = "rt", try_number: int = 1) -> str:
        run = self.home.run(run_pk)
        folder = self.home.settings.logs_folder
        return log_path(folder, run.dag_id, run.run_id, task_id, -1, try_number).read_text()

    def rows(self, task_id: str = "rt") -> dict[str, object]:
        with session_scope(self.home.url) as session:
            query = select(XCom.key, XCom.value).where(XCom.task_id == task_id)
            return {row.key: json.loads(row.value) for row in session.execute(query)}


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    markers = tmp_path / "markers"
    markers.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the helper imports the test backends
    monkeypatch.setenv("TW_TEST_MARKERS", str(markers))
    env = {
        "object_storage_url": f"file://{tmp_path}/objects",
        "object_storage_conn_id": "objects",
        "xcom_object_threshold_bytes": "64",
        "heartbeat_seconds": str(HEARTBEAT_SECONDS),
        "zombie_threshold_seconds": str(ZOMBIE_SECONDS),
        "kill_grace_seconds": "0.5",
    }
    with tradewind_home(tmp_path, monkeypatch, **env) as home:
        home.write_dag(DAGS.format(script=str(SCRIPT)))
        assert home.sync().import_errors == {}
        with session_scope(home.url) as session:
            put_connection(session, "objects", conn_type="fs")
        yield Setup(home, markers, monkeypatch)


def run_watched(setup: Setup, dag_id: str, task_id: str) -> tuple[Watch, int, list[str]]:
    """Run ``dag_id`` while a thread samples ``task_id``'s heartbeats."""
    with watching(setup.home.url, task_id, ZOMBIE_SECONDS) as watch:
        run_pk, outcomes = setup.run(dag_id)
    return watch, run_pk, outcomes


def test_heartbeats_go_on_while_a_store_blocks_longer_than_the_zombie_threshold(
    setup: Setup,
) -> None:
    setup.configure(store=3 * ZOMBIE_SECONDS)
    watch, run_pk, outcomes = run_watched(setup, "slow_push", "rt")
    assert outcomes == ["success"]
    starts = [line for line in setup.marker("calls") if line.startswith("store rt big")]
    assert len(starts) == 1  # the one call that slept 3 s, three zombie thresholds
    assert len(watch.heartbeats) >= 10
    # The contract is that no beat is ever missed long enough to look like a zombie; how close
    # the gaps stay to the interval depends on the machine's load, which a test cannot pin.
    assert watch.worst_gap_seconds() < ZOMBIE_SECONDS
    assert not watch.zombie_seen
    assert setup.home.ti(run_pk, "rt").try_number == 1
    assert REFERENCE_KEY in setup.rows()["big"]  # type: ignore[operator]


def test_execution_timeout_kills_the_task_while_a_load_hangs(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(BackendHelper, "exit_timeout_seconds", 1.0)
    setup.configure(load=60)
    started = time.monotonic()
    run_pk, outcomes = setup.run("hanging_pull")
    assert outcomes == ["success", "failed"]
    assert time.monotonic() - started < 55  # the load hangs for 60 s: the timeout cut it
    ti = setup.home.ti(run_pk, "rt")
    assert ti.error == "execution_timeout of 12s exceeded"
    # The load had started (12 s leave the helper time to come up, even on a busy machine) and
    # never finished.
    loads = [line.split()[:2] for line in setup.marker("calls") if line.startswith("load")]
    assert loads == [["load", "produce"]]
    log = setup.log(run_pk)
    assert "execution_timeout of 12s exceeded: sending SIGTERM" in log
    assert "the backend helper process did not exit within 1s: sending SIGTERM" in log
    (pid,) = setup.marker("helper.pid")
    assert pid_gone(pid)


def test_a_helper_killed_mid_call_fails_the_waiting_call_and_the_try_cleanly(
    setup: Setup,
) -> None:
    setup.configure(load=60)

    def kill_helper_once_the_load_started() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if any(line.startswith("load produce") for line in setup.marker("calls")):
                os.kill(int(setup.marker("helper.pid")[0]), signal.SIGKILL)
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_helper_once_the_load_started)
    killer.start()
    run_pk, outcomes = setup.run("pull")
    killer.join()
    assert outcomes == ["success", "failed"]
    expected = "the backend helper process exited (killed by SIGKILL) before it answered"
    assert setup.home.ti(run_pk, "rt").error == f"RequestFailed: {expected}"
    log = setup.log(run_pk)
    assert f"supervisor: {expected}: failing 1 call(s)" in log
    assert setup.rows() == {}


def test_what_an_earlier_try_stored_is_purged_before_the_retry_runs(setup: Setup) -> None:
    setup.configure()
    run_pk, outcomes = setup.run("retry_purge")
    assert outcomes == ["up_for_retry", "success"]
    assert setup.marker("purged") == ["rt partial"]
    purge_started = [line for line in setup.marker("calls") if line.startswith("purge")]
    second_push = [line for line in setup.marker("calls") if line.startswith("store rt partial")][1]
    assert float(purge_started[0].split()[3]) < float(second_push.split()[3])
    assert "purged XCom 'partial' left by an earlier try" in setup.log(run_pk, try_number=2)
    partial = setup.home.root / "objects" / "retry_purge"
    # Try 2 pushed 'partial' again (then 'return_value'); the object of try 1 went first.
    assert set(setup.rows()) == {"partial", "return_value"}
    assert any(partial.rglob("partial"))


def test_arguments_are_resolved_through_the_helper_before_the_task_starts(setup: Setup) -> None:
    setup.configure()
    run_pk, outcomes = setup.run("arguments")
    assert outcomes == ["success", "success"]
    # "p" * 200 as JSON is 202 characters; it was stored as an object and loaded by the helper.
    assert "stdout: arguments: 202 characters" in setup.log(run_pk)
    assert [line.split()[:3] for line in setup.marker("calls") if line.startswith("load")] == [
        ["load", "produce", "return_value"]
    ]
    row = setup.rows()["return_value"]
    assert REFERENCE_KEY in row  # type: ignore[operator]


def test_secrets_of_the_task_and_the_helper_appear_nowhere_in_the_log(setup: Setup) -> None:
    with session_scope(setup.home.url) as session:
        put_connection(
            session, "warehouse", conn_type="postgres", login="etl", password="pw-task-4242"
        )
        put_connection(session, "objects", conn_type="fs", password="pw-helper-1717")
        set_variable(session, "api_token", "var-secret-5150")
        set_variable(session, "helper_note", "just a note")
    setup.configure("ConnectionBackend")
    run_pk, outcomes = setup.run("secrets")
    assert outcomes == ["success"]
    log = setup.log(run_pk)
    for secret in ("pw-task-4242", "pw-helper-1717", "var-secret-5150", "tok-live-98765"):
        assert secret not in log
    assert "stdout: connection warehouse has password ***" in log
    assert "stdout: variable api_token is ***" in log
    assert "stdout: the token is ***" in log
    assert "backend-helper: helper connected with password ***" in log


SLOW_READER = """
import json, os, socket, struct, sys, time
sys.path.insert(0, {root!r})
from worker import wire as p

comms = socket.socket(fileno=int(os.environ["TRADEWIND_COMMS_FD"]))
def ask(message):
    comms.sendall(p.encode(message))
    return p.TO_TASK.validate_json(p.read_frame(comms))

ask(p.GetTaskDetails(id=1, protocol_version=p.PROTOCOL_VERSION))
comms.sendall(p.encode(p.GetXCom(id=2, task_id="big")))
time.sleep(3)  # a reader this slow would have held up a blocking supervisor for 3 s
reply = p.TO_TASK.validate_json(p.read_frame(comms))
print("pulled", len(reply.value))
ask(p.SucceedTask(id=3))
"""

SLOW_READER_DAG = """
import sys
from tradewind import dag, task

@task
def big():
    return "b" * (8 << 20)

@task.runtime(command=[sys.executable, {script!r}])
def reader():
    '''Asks for 8 MiB, then reads nothing for 3 s.'''

@dag(dag_id="slow_reader")
def slow_reader():
    big() >> reader()

slow_reader()
"""


def test_a_task_slow_to_read_its_reply_does_not_hold_up_heartbeats(
    setup: Setup, tmp_path: Path
) -> None:
    script = tmp_path / "slow_reader.py"
    script.write_text(SLOW_READER.format(root=str(ROOT)))
    setup.home.write_dag(SLOW_READER_DAG.format(script=str(script)), name="slow_reader.py")
    assert setup.home.sync().import_errors == {}
    watch, run_pk, outcomes = run_watched(setup, "slow_reader", "reader")
    assert outcomes == ["success", "success"]
    assert f"stdout: pulled {8 << 20}" in setup.log(run_pk, "reader")
    assert len(watch.heartbeats) >= 5  # several beats during a read of ~4 s
    # The contract is that no beat is ever missed long enough to look like a zombie; how close
    # the gaps stay to the interval depends on the machine's load, which a test cannot pin.
    assert watch.worst_gap_seconds() < ZOMBIE_SECONDS
    assert not watch.zombie_seen


def test_each_task_instance_of_an_expanded_runtime_task_gets_its_own_item(setup: Setup) -> None:
    setup.configure()
    _, outcomes = setup.run("mapped")
    assert outcomes == ["success"] * 5  # numbers, three map indexes of rt, total
    with session_scope(setup.home.url) as session:
        query = select(XCom.map_index, XCom.value).where(XCom.task_id == "rt")
        pushed = sorted((row.map_index, json.loads(row.value)) for row in session.execute(query))
    assert pushed == [(0, 10), (1, 20), (2, 30)]
    assert setup.rows("total") == {"return_value": 60}


def test_a_runtime_task_mapped_over_a_literal_list_gets_its_own_item(setup: Setup) -> None:
    _, outcomes = setup.run("mapped_literal")
    assert outcomes == ["success"] * 4  # three map indexes of rt, total
    with session_scope(setup.home.url) as session:
        query = select(XCom.map_index, XCom.value).where(XCom.task_id == "rt")
        pushed = sorted((row.map_index, json.loads(row.value)) for row in session.execute(query))
    assert pushed == [(0, 1), (1, 2), (2, 3)]
    assert setup.rows("total") == {"return_value": 6}
