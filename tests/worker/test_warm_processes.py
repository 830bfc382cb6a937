"""Warm task processes (TRADEWIND_TASK_PROCESS_REUSE): one task process runs several tries.

As in tests/worker/test_fork_server.py, this process plays the Celery pool process: the fork
server is on, tries run through ``worker.supervisor.execute.execute`` against a real SQLite store,
the task processes are real, and so are the signals and the child processes a try leaves behind. A
task notes its pid; a ``probe`` run afterwards says which process the next try got.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from state.core.enums import TaskInstanceState
from tests.state.harness import Home, tradewind_home
from tests.worker.test_supervisor import (
    out,
    pid_gone,
    run_tries,
    start,
    try_log,
    wait_until,
)
from worker.fork_server import client as fork_server
from worker.fork_server import warm

TI = TaskInstanceState

ROOT = Path(__file__).resolve().parents[2]
DAGS = """
import datetime as dt
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tradewind import DAG, get_current_context, task

OUT = Path({out!r})
VERSION = 1
CALLS = []  # module state: a warm process keeps it from one try to the next


def note(name, text):
    with open(OUT / name, "a") as f:
        f.write(f"{{text}}\\n")


@task
def counted():
    CALLS.append(1)
    ti = get_current_context()["ti"]
    print(f"printed by {{ti.task_id}}")
    note("counted", f"{{ti.task_id}} {{os.getpid()}} {{len(CALLS)}} {{VERSION}}")
    return os.getpid()


with DAG("four"):
    counted.override(task_id="a")() >> counted.override(task_id="b")() >> \\
        counted.override(task_id="c")() >> counted.override(task_id="d")()

with DAG("probe"):
    counted.override(task_id="probe")()


def scenario(name, timeout=None):
    # Only the timeout's own scenario has one: a busy machine must not time the others out.
    def wrap(function):
        def run():
            note("pid", str(os.getpid()))
            return function()
        run.__name__ = name
        with DAG(name):
            task(execution_timeout=timeout)(run)()
        return function
    return wrap


@scenario("chdir")
def _():
    os.chdir("/")


@scenario("setenv")
def _():
    os.environ["TW_TEST_LEFT_BEHIND"] = "1"


@scenario("child")
def _():
    child = subprocess.Popen(["sleep", "60"])
    note("child", str(child.pid))


@scenario("orphan")
def _():
    # sh exits at once; its sleep is orphaned, and adopted by the task process (the subreaper)
    command = ["sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"]
    shell = subprocess.run(command, capture_output=True, text=True)
    note("child", shell.stdout.strip())


@scenario("thread")
def _():
    threading.Thread(target=time.sleep, args=(60,), name="lingering", daemon=True).start()


@scenario("timeout", timeout=dt.timedelta(seconds=1.5))
def _():
    time.sleep(60)


@scenario("killed")
def _():
    os.kill(os.getpid(), signal.SIGKILL)


@scenario("crash")
def _():
    os._exit(3)


@scenario("raises")
def _():
    raise ValueError("a plain failure")


@scenario("quiet")
def _():
    pass


@task
def numbers():
    return list(range(8))


@task(task_concurrency=3)
def doubled(x):
    note("item_pid", str(os.getpid()))
    return x * 2


@task
def pid_of(values):
    note("pid", str(os.getpid()))
    return values


with DAG("items"):
    pid_of(doubled.iterate(x=numbers()))


@task.runtime(command=[sys.executable, {runtime!r}])
def runtime_pid():
    pass


with DAG("runtime"):
    runtime_pid()
"""

# A runtime task: it says which process it is, and whose child.
RUNTIME = """
import os, socket, sys
sys.path.insert(0, {root!r})
from worker import wire as p

comms = socket.socket(fileno=int(os.environ["TRADEWIND_COMMS_FD"]))
for n, request in enumerate([
    p.GetTaskDetails(protocol_version=p.PROTOCOL_VERSION),
    p.SetXCom(key="return_value", value=[os.getpid(), os.getppid()]),
    p.SucceedTask(),
], start=1):
    request.id = n
    comms.sendall(p.encode(request))
    p.read_frame(comms)
"""


@contextmanager
def pool_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reuse: str) -> Iterator[Home]:
    """A store with the DAGs above, and this process a pool process with its fork server."""
    with tradewind_home(
        tmp_path,
        monkeypatch,
        heartbeat_seconds="0.2",
        kill_grace_seconds="0.5",
        task_process_reuse=reuse,
    ) as made:
        (tmp_path / "out").mkdir()
        runtime = tmp_path / "runtime_task.py"
        runtime.write_text(RUNTIME.format(root=str(ROOT)))
        made.write_dag(DAGS.format(out=str(tmp_path / "out"), runtime=str(runtime)))
        assert made.sync().import_errors == {}
        fork_server.use_fork_server()
        try:
            yield made
        finally:
            fork_server.stop_fork_server()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    with pool_process(tmp_path, monkeypatch, reuse="3") as made:
        assert made.settings.task_process_reuse == 3
        yield made


def counted(home: Home) -> list[tuple[str, int, int, int]]:
    """(task, pid, len(CALLS), VERSION) of each counted try, in order."""
    rows = [line.split() for line in out(home, "counted")]
    return [(task, int(pid), int(calls), int(version)) for task, pid, calls, version in rows]


def run_dag(home: Home, dag_id: str) -> list[str]:
    run_pk, pending = start(home, dag_id)
    RUNS[dag_id] = run_pk
    return run_tries(home, run_pk, pending)


RUNS: dict[str, int] = {}  # the run of each DAG's last run_dag


def probe_pid(home: Home) -> int:
    """The pid of the process the next try runs in."""
    assert run_dag(home, "probe") == ["success"]
    return counted(home)[-1][1]


def scenario_pid(home: Home) -> int:
    return int(out(home, "pid")[-1])


def test_a_warm_process_runs_up_to_n_tries_keeping_module_state(home: Home) -> None:
    run_pk, pending = start(home, "four")

    assert run_tries(home, run_pk, pending) == ["success"] * 4

    tries = counted(home)
    first = tries[0][1]
    # Three tries in one process, its module state carried over; the fourth in a fresh one.
    assert [(task, pid == first, calls) for task, pid, calls, _ in tries] == [
        ("a", True, 1),
        ("b", True, 2),
        ("c", True, 3),
        ("d", False, 1),
    ]
    # Each try its own context, its own XCom row, its own log with only its own output.
    xcoms = home.xcoms(run_pk)
    for task, pid, _, _ in tries:
        assert json.loads(xcoms[(task, "return_value")]) == pid
        log = try_log(home, run_pk, task, 1)
        assert f"printed by {task}" in log
        assert all(f"printed by {other}" not in log for other in "abcd" if other != task)
        assert home.ti(run_pk, task).state == TI.SUCCESS


def test_with_the_default_every_try_gets_a_fresh_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pool_process(tmp_path, monkeypatch, reuse="1") as made:
        assert run_dag(made, "four") == ["success"] * 4
    assert len({pid for _, pid, _, _ in counted(made)}) == 4


@pytest.mark.parametrize("dag_id", ["quiet", "raises"])
def test_a_try_that_ends_cleanly_leaves_its_process_for_the_next(home: Home, dag_id: str) -> None:
    expected = "success" if dag_id == "quiet" else "failed"
    assert run_dag(home, dag_id) == [expected]

    assert probe_pid(home) == scenario_pid(home)


@pytest.mark.parametrize(
    ("dag_id", "reason"),
    [
        ("chdir", "the try changed its working directory (to /)"),
        ("setenv", "the try changed its environment (TW_TEST_LEFT_BEHIND)"),
        ("thread", "the try left threads running (lingering)"),
    ],
)
def test_a_try_that_changes_its_process_ends_it(home: Home, dag_id: str, reason: str) -> None:
    assert run_dag(home, dag_id) == ["success"]

    assert probe_pid(home) != scenario_pid(home)
    assert f"the task process is not reused: {reason}" in try_log(home, RUNS[dag_id], dag_id, 1)
    assert wait_until(lambda: pid_gone(scenario_pid(home)), 20)


@pytest.mark.parametrize("dag_id", ["child", "orphan"])
def test_a_try_that_leaves_a_child_process_ends_its_process_and_the_child(
    home: Home, dag_id: str
) -> None:
    assert run_dag(home, dag_id) == ["success"]
    [child] = [int(pid) for pid in out(home, "child")]

    assert probe_pid(home) != scenario_pid(home)
    assert f"not reused: the try left child processes running (pid {child})" in try_log(
        home, RUNS[dag_id], dag_id, 1
    )
    assert wait_until(lambda: pid_gone(child), 20), "the left child outlived its task process"


@pytest.mark.parametrize(
    ("dag_id", "error"),
    [
        ("timeout", "execution_timeout of 1.5s exceeded"),
        ("killed", "task process ended without an outcome: killed by SIGKILL"),
        ("crash", "task process ended without an outcome: exit code 3"),
    ],
)
def test_a_try_that_timed_out_was_killed_or_crashed_ends_its_process(
    home: Home, dag_id: str, error: str
) -> None:
    assert run_dag(home, dag_id) == ["failed"]
    assert home.ti(RUNS[dag_id], dag_id).error == error

    assert probe_pid(home) != scenario_pid(home)
    assert wait_until(lambda: pid_gone(scenario_pid(home)), 20)


def test_an_idle_process_killed_while_it_waits_is_replaced(home: Home) -> None:
    first = probe_pid(home)
    os.kill(first, signal.SIGKILL)
    assert wait_until(lambda: pid_gone(first))

    assert probe_pid(home) != first


def test_a_changed_dag_file_is_imported_again_in_the_warm_process(home: Home) -> None:
    first = probe_pid(home)
    dag_file = home.dags / "dags.py"
    dag_file.write_text(dag_file.read_text().replace("VERSION = 1", "VERSION = 2"))
    modified = dag_file.stat().st_mtime + 1
    os.utime(dag_file, (modified, modified))
    assert home.sync().import_errors == {}

    assert probe_pid(home) == first
    # The same process, the new code: its module imported again, so its state starts over.
    assert counted(home) == [("probe", first, 1, 1), ("probe", first, 1, 2)]


def test_stopping_the_fork_server_lets_the_idle_process_go(home: Home) -> None:
    idle = probe_pid(home)
    idle_process = warm.idle_process()
    assert idle_process is not None and idle_process.pid == idle

    fork_server.stop_fork_server()

    assert warm.idle_process() is None
    assert wait_until(lambda: pid_gone(idle))


def test_an_iterable_task_s_item_threads_are_done_with_when_it_ends(home: Home) -> None:
    assert run_dag(home, "items") == ["success"] * 3  # numbers, doubled (iterable), pid_of
    run_pk = RUNS["items"]
    assert json.loads(home.xcoms(run_pk)[("pid_of", "return_value")]) == [x * 2 for x in range(8)]

    # Its items ran on threads that were joined: the same process ran the next try.
    assert set(out(home, "item_pid")) == {str(scenario_pid(home))}
    assert "not reused" not in try_log(home, run_pk, "doubled", 1)


def test_a_runtime_task_starts_fresh_and_leaves_the_warm_process_waiting(home: Home) -> None:
    warm_pid = probe_pid(home)

    assert run_dag(home, "runtime") == ["success"]

    runtime_pid, runtime_parent = json.loads(
        home.xcoms(RUNS["runtime"])[("runtime_pid", "return_value")]
    )
    assert runtime_pid != warm_pid
    assert runtime_parent == os.getpid()  # exec'd by the supervisor itself, as always
    assert probe_pid(home) == warm_pid


def fork_server_children() -> set[int]:
    server = fork_server.current_server()
    assert server is not None
    children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
    return {int(pid) for pid in children}


def test_no_spare_waits_beside_a_warm_process_until_one_is_needed(home: Home) -> None:
    first = probe_pid(home)
    # The spare the try took stays warm: the server forked no other behind it. (Waited for:
    # the server checks the try's DAG file in a short-lived child of its own meanwhile,
    # tradewind/dag_processor.py; a spare forked behind it would stay.)
    assert wait_until(lambda: fork_server_children() == {first})

    os.kill(first, signal.SIGKILL)
    assert wait_until(lambda: pid_gone(first))
    # The next try asks for a spare and runs in it; that one is kept warm in turn.
    second = probe_pid(home)
    assert second != first
    assert wait_until(lambda: fork_server_children() == {second})


def test_without_reuse_a_spare_is_forked_ahead_of_the_next_try(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pool_process(tmp_path, monkeypatch, reuse="1") as made:
        ran = probe_pid(made)
        assert wait_until(lambda: len(fork_server_children() - {ran}) == 1)
