"""Task processes forked by the fork server, as in a Celery worker's slot.

Each test turns the fork server on in this process (``use_fork_server``, what a worker does at its
start) and runs tries through ``worker.supervisor.execute.execute`` against a real SQLite store, as
the supervisor tests do; the faults are real processes killed with real signals.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from state.core.enums import DagRunState, TaskInstanceState
from tests.state.harness import Home
from tests.worker.test_supervisor import (
    out,
    pid_gone,
    run_tries,
    start,
    supervised_home,
    wait_until,
)
from worker import wire as p
from worker.fork_server import client as fork_server
from worker.fork_server.client import ForkServer
from worker.supervisor import requests
from worker.supervisor.try_context import TryContext

TI = TaskInstanceState
ROOT = Path(__file__).resolve().parents[2]

DAGS = """
import datetime as dt
import os
import subprocess
import time
from pathlib import Path

from tradewind import DAG, task

OUT = Path({out!r})
VERSION = 1


def note(name, text):
    with open(OUT / name, "a") as f:
        f.write(f"{{text}}\\n")


@task
def parentage():
    parent = Path(f"/proc/{{os.getppid()}}/cmdline").read_bytes().replace(b"\\0", b" ")
    note("parent", parent.decode())
    return os.getpid()


@task
def double(pid):
    return pid * 2


with DAG("parentage"):
    double(parentage())


@task(execution_timeout=dt.timedelta(seconds=6))  # time to start on a busy machine
def slow():
    child = subprocess.Popen(["sleep", "60"])
    note("grandchild", str(child.pid))
    note("slow_pid", str(os.getpid()))
    time.sleep(60)


with DAG("timeout"):
    slow()


@task
def version():
    return VERSION


with DAG("versioned"):
    version()


@task
def blob_size(params=None, dag_run=None):
    return [len(params["blob"]), len(dag_run.conf["blob"])]


with DAG("big_conf"):
    blob_size()


@task
def leaves_setsid(params=None):
    child = subprocess.Popen(["setsid", "sleep", "600"])
    note("leftover", str(child.pid))
    if params.get("fail"):
        raise RuntimeError("failed on purpose")


with DAG("setsid_leftover"):
    leaves_setsid()


@task
def lazy_import():
    import sys

    had = "airflow.utils.helpers" in sys.modules
    import airflow.utils.helpers  # as a provider's hook is, on first use

    return had


with DAG("lazy_import"):
    lazy_import()
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    with supervised_home(tmp_path, monkeypatch, DAGS) as made:
        fork_server.use_fork_server()
        try:
            yield made
        finally:
            fork_server.stop_fork_server()


def server() -> ForkServer:
    current = fork_server.current_server()  # this slot's, once use_fork_server() ran
    assert current is not None
    return current


def spares_of(pid: int) -> list[int]:
    listed = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(child) for child in listed.split()]


def the_one_spare() -> int:
    """The server's one child once it stays alone: the last task process, exiting, has gone."""
    deadline = time.monotonic() + 20
    before: list[int] = []
    while time.monotonic() < deadline:
        now = spares_of(server().pid)
        if len(now) == 1 and now == before:
            return now[0]
        before = now
        time.sleep(0.3)
    raise AssertionError(f"the fork server's children never settled to one spare: {before}")


def test_the_tasks_run_in_processes_the_fork_server_forked(home: Home) -> None:
    run_pk, pending = start(home, "parentage")

    assert run_tries(home, run_pk, pending) == ["success", "success"]

    assert home.run_state(run_pk) == DagRunState.SUCCESS
    [parent] = out(home, "parent")
    assert "worker.fork_server.main" in parent
    task_pid = json.loads(home.xcoms(run_pk)[("parentage", "return_value")])
    assert task_pid not in (os.getpid(), server().pid)
    assert json.loads(home.xcoms(run_pk)[("double", "return_value")]) == task_pid * 2
    assert home.ti(run_pk, "parentage").pid == os.getpid()  # the supervisor's, as always


def test_two_slots_supervise_at_once_each_with_its_own_fork_server(home: Home) -> None:
    """As on the threads pool: two supervisor threads of this process, a run each, at once."""
    runs = [start(home, "parentage") for _ in range(2)]
    outcomes: dict[int, list[str]] = {}
    servers: dict[int, int] = {}
    together = threading.Barrier(2)

    def slot(index: int) -> None:
        together.wait()
        run_pk, pending = runs[index]
        outcomes[index] = run_tries(home, run_pk, pending)
        servers[index] = server().pid

    slots = [threading.Thread(target=slot, args=(index,)) for index in range(2)]
    for thread in slots:
        thread.start()
    for thread in slots:
        thread.join(120)

    assert outcomes == {0: ["success", "success"], 1: ["success", "success"]}
    assert servers[0] != servers[1]  # one fork server per slot
    assert all("worker.fork_server.main" in parent for parent in out(home, "parent"))
    for run_pk, _pending in runs:
        task_pid = json.loads(home.xcoms(run_pk)[("parentage", "return_value")])
        assert json.loads(home.xcoms(run_pk)[("double", "return_value")]) == task_pid * 2


def test_execution_timeout_kills_the_group_of_a_task_the_server_forked(home: Home) -> None:
    run_pk, pending = start(home, "timeout")

    assert run_tries(home, run_pk, pending, limit=1) == ["failed"]

    [grandchild] = [int(pid) for pid in out(home, "grandchild")]
    [task_pid] = [int(pid) for pid in out(home, "slow_pid")]
    assert wait_until(lambda: pid_gone(grandchild)), "the task's own child outlived the timeout"
    assert wait_until(lambda: pid_gone(task_pid))
    assert home.ti(run_pk, "slow").error == "execution_timeout of 6s exceeded"


def test_a_fork_server_killed_between_tries_is_started_again(home: Home) -> None:
    first = server().pid
    os.kill(first, signal.SIGKILL)
    assert wait_until(lambda: pid_gone(first))

    run_pk, pending = start(home, "parentage")

    assert run_tries(home, run_pk, pending) == ["success", "success"]
    assert server().pid != first


def test_a_spare_task_process_killed_while_it_waits_is_replaced(home: Home) -> None:
    run_pk, pending = start(home, "parentage")
    assert run_tries(home, run_pk, pending) == ["success", "success"]
    spare = the_one_spare()
    os.kill(spare, signal.SIGKILL)
    assert wait_until(lambda: pid_gone(spare))

    run_pk, pending = start(home, "parentage")

    assert run_tries(home, run_pk, pending) == ["success", "success"]
    assert json.loads(home.xcoms(run_pk)[("parentage", "return_value")]) != spare


def test_a_changed_dag_file_runs_its_new_code(home: Home) -> None:
    run_pk, pending = start(home, "versioned")
    assert run_tries(home, run_pk, pending) == ["success"]
    dag_file = home.dags / "dags.py"
    dag_file.write_text(dag_file.read_text().replace("VERSION = 1", "VERSION = 2"))
    modified = dag_file.stat().st_mtime + 1
    os.utime(dag_file, (modified, modified))
    assert home.sync().import_errors == {}

    run_pk, pending = start(home, "versioned")

    assert run_tries(home, run_pk, pending) == ["success"]
    assert json.loads(home.xcoms(run_pk)[("version", "return_value")]) == 2


POOL_PROCESS = """
import sys, time
from worker import wire as p
from worker.fork_server import client as fork_server
from worker.supervisor import requests
from worker.dags import find_task

fork_server.use_fork_server()
dag, task = find_task(sys.argv[1], "timeout", "slow")
process = fork_server.start_python_task(sys.argv[1], dag, task)
print(fork_server.current_server().pid, process.pid, flush=True)
time.sleep(60)
"""


def test_a_pool_process_killed_takes_its_fork_server_and_task_with_it(home: Home) -> None:
    dag_file = home.dags / "dags.py"
    pool = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(POOL_PROCESS), str(dag_file)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert pool.stdout is not None
    with pool.stdout:
        server_pid, task_pid = (int(pid) for pid in pool.stdout.readline().split())
    assert not pid_gone(task_pid)  # waiting for its supervisor's answer to its handshake

    pool.kill()
    pool.wait()

    assert wait_until(lambda: pid_gone(server_pid)), "the fork server outlived its pool process"
    assert wait_until(lambda: pid_gone(task_pid)), "the task process outlived its supervisor"


def test_a_task_process_that_ends_before_its_start_is_reported_still_has_its_exit_code(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    say_taken = ForkServer._send

    def after_the_end(self: ForkServer, message: p.SpareTaken | p.ForkSpare) -> None:
        if isinstance(message, p.SpareTaken):
            reaped = Path(f"/proc/{message.pid}")
            assert wait_until(lambda: not reaped.exists())  # the server reaped it meanwhile
        say_taken(self, message)

    monkeypatch.setattr(ForkServer, "_send", after_the_end)
    # No such file: the task process says why on its stderr and exits 70 at once.
    process = server().start(str(home.dags / "missing.py"), "parentage", "parentage")

    assert process.poll(wait=True) == 70
    with os.fdopen(process.stderr) as stderr:
        assert "does not exist on this worker" in stderr.read()
    process.comms.close()
    os.close(process.stdout)


def test_a_first_try_gets_its_details_with_its_start_and_asks_nothing(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[p.GetTaskDetails] = []
    answer = requests.HANDLERS[p.GetTaskDetails]

    def count(ctx: TryContext, request: p.GetTaskDetails) -> p.Message | None:
        asked.append(request)
        return answer(ctx, request)

    monkeypatch.setitem(requests.HANDLERS, p.GetTaskDetails, count)
    run_pk, pending = start(home, "parentage")

    assert run_tries(home, run_pk, pending) == ["success", "success"]

    assert asked == []  # nothing to purge or load first: no handshake round trip
    task_pid = json.loads(home.xcoms(run_pk)[("parentage", "return_value")])
    assert json.loads(home.xcoms(run_pk)[("double", "return_value")]) == task_pid * 2


@pytest.mark.parametrize("size", [70_000, 1_000_000])
def test_a_try_whose_details_are_over_a_packet_asks_for_them_and_sees_them_whole(
    home: Home, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    asked: list[p.GetTaskDetails] = []
    answer = requests.HANDLERS[p.GetTaskDetails]

    def count(ctx: TryContext, request: p.GetTaskDetails) -> p.Message | None:
        asked.append(request)
        return answer(ctx, request)

    monkeypatch.setitem(requests.HANDLERS, p.GetTaskDetails, count)
    run_pk, pending = start(home, "big_conf", conf={"blob": "x" * size})

    assert run_tries(home, run_pk, pending) == ["success"]

    assert len(asked) == 1  # left out of the start, asked for on the stream socket
    assert json.loads(home.xcoms(run_pk)[("blob_size", "return_value")]) == [size, size]


def test_a_hand_over_the_fork_server_never_answers_fails_within_its_deadline(home: Home) -> None:
    stuck = server()
    the_one_spare()  # handed over ahead: the first start below needs nothing of the server
    os.kill(stuck.pid, signal.SIGSTOP)
    fileloc = str(home.dags / "dags.py")
    first = stuck.start(fileloc, "parentage", "parentage", timeout_seconds=30)

    began = time.monotonic()
    with pytest.raises(
        fork_server.HandOverTimeout,
        match=r"^no task process was handed over within 1s \(TRADEWIND_TASK_START_TIMEOUT",
    ):
        stuck.start(fileloc, "parentage", "parentage", timeout_seconds=1)

    assert time.monotonic() - began < 30  # its deadline, not for ever
    assert stuck.gone
    assert wait_until(lambda: pid_gone(stuck.pid)), "the stuck fork server was left running"
    assert wait_until(lambda: pid_gone(first.pid)), "its task process outlived it"
    for end in (first.stdout, first.stderr):
        os.close(end)
    first.comms.close()
    # The next try of the slot gets a fresh server.
    run_pk, pending = start(home, "parentage")
    assert run_tries(home, run_pk, pending) == ["success", "success"]
    assert server().pid != stuck.pid


@pytest.mark.parametrize("fail", [False, True])
def test_a_setsid_grandchild_ends_with_its_try(home: Home, fail: bool) -> None:
    run_pk, pending = start(home, "setsid_leftover", conf={"fail": fail})

    assert run_tries(home, run_pk, pending, limit=1) == ["failed" if fail else "success"]

    [leftover] = [int(pid) for pid in out(home, "leftover")]
    try:
        assert wait_until(lambda: pid_gone(leftover), 20), "the setsid grandchild outlived its try"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(leftover, signal.SIGKILL)
    assert server().gone is False  # the server lives on: it only ended what the try left


def test_a_module_a_try_imported_on_first_use_is_in_later_spares(home: Home) -> None:
    """The try reports it to its fork server, which imports it before its next fork: the spare
    taken for the third try at the latest has it (the second's may have been forked before)."""
    had = []
    for _ in range(3):
        run_pk, pending = start(home, "lazy_import")
        assert run_tries(home, run_pk, pending) == ["success"]
        had.append(json.loads(home.xcoms(run_pk)[("lazy_import", "return_value")]))

    assert had[0] is False
    assert had[2] is True
