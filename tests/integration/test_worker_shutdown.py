"""Stopping a worker with real signals: its running tries end as before, and nothing is left.

On the threads pool (the default) the Celery main process supervises every slot and its fork
servers are its own children; on prefork they are its pool processes' children. Either way a
warm shutdown (SIGTERM) lets the running try finish and record its end, then every fork server
and task process goes (an idle warm one too); a cold one (a second SIGTERM) takes the running
task with it, and the zombie rule retries it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.conftest import Fleet

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def _tree(pid: int) -> list[int]:
    """``pid``'s descendants, now."""
    found, todo = [], [pid]
    while todo:
        try:
            children = _children(todo.pop())
        except FileNotFoundError:
            continue
        found += children
        todo += children
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _gone(pid: int) -> bool:
    try:
        return "State:\tZ" in Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True


def _fork_servers(worker: int) -> list[int]:
    """The worker's fork servers (their task processes, forked, have the same command line)."""
    servers = [pid for pid in _tree(worker) if "worker.fork_server.main" in _cmdline(pid)]
    return [pid for pid in servers if "worker.fork_server.main" not in _cmdline(_parent(pid))]


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@pytest.mark.parametrize("pool", [None, "prefork"])
def test_a_warm_shutdown_lets_the_running_try_finish_then_leaves_nothing(
    fleet: Fleet, tmp_path: Path, pool: str | None
) -> None:
    fleet.env["TRADEWIND_ZOMBIE_THRESHOLD_SECONDS"] = "30"  # the try must not be given up
    worker = fleet.start_worker(pool=pool)
    fleet.start_scheduler()
    marker = tmp_path / "tries.txt"
    fleet.trigger("slow_dag", "r1", conf={"marker": str(marker), "sleep": 4})
    fleet.wait_for(lambda: marker.exists() and marker.read_text().strip(), 30, "the first try")
    task_pid = int(marker.read_text().split()[1])
    started = _tree(worker.pid)
    assert task_pid in started
    assert len(_fork_servers(worker.pid)) == 2  # one per slot
    if pool is None:  # the threads pool, with its interval (worker/celery_app.py)
        assert "threads pool: 2 slots" in fleet.log("w1")
        assert "GIL switch interval 0.5 ms" in fleet.log("w1")

    os.kill(worker.pid, signal.SIGTERM)

    assert worker.wait(60) == 0
    # The running try was let finish, and its end recorded: no retry was needed.
    assert fleet.task_states("slow_dag", "r1")["slow"] == ("success", 1)
    assert all(_gone(pid) for pid in started), "a process of the worker outlived it"


def test_a_warm_shutdown_lets_an_idle_warm_task_process_go(fleet: Fleet, tmp_path: Path) -> None:
    fleet.env["TRADEWIND_TASK_PROCESS_REUSE"] = "10"
    worker = fleet.start_worker()
    fleet.start_scheduler()
    marker = tmp_path / "tries.txt"
    fleet.trigger("slow_dag", "r1", conf={"marker": str(marker), "sleep": 0})
    assert fleet.wait_run("slow_dag", "r1") == "success"
    idle = int(marker.read_text().split()[1])
    fleet.wait_for(lambda: idle in _tree(worker.pid), 10, "the idle warm task process")
    left = _tree(worker.pid)

    os.kill(worker.pid, signal.SIGTERM)

    assert worker.wait(60) == 0
    assert all(_gone(pid) for pid in left), "an idle task process or its server outlived it"


def test_a_cold_shutdown_takes_the_running_task_with_it(fleet: Fleet, tmp_path: Path) -> None:
    worker = fleet.start_worker()
    fleet.start_scheduler()
    marker = tmp_path / "tries.txt"
    fleet.trigger("slow_dag", "r1", conf={"marker": str(marker), "sleep": 60})
    fleet.wait_for(lambda: marker.exists() and marker.read_text().strip(), 30, "the first try")
    task_pid = int(marker.read_text().split()[1])
    started = _tree(worker.pid)

    os.kill(worker.pid, signal.SIGQUIT)  # Celery's cold shutdown

    try:
        worker.wait(60)
    except subprocess.TimeoutExpired:
        pytest.fail("the worker did not stop at SIGQUIT")
    fleet.wait_for(lambda: all(_gone(pid) for pid in started), 20, "the worker's processes to go")
    assert _gone(task_pid)
    # The try it held is the zombie rule's: a worker started now runs its retry.
    fleet.start_worker("w2")
    assert fleet.wait_run("slow_dag", "r1", timeout=90) == "success"
    assert fleet.task_states("slow_dag", "r1")["slow"] == ("success", 2)


def test_a_cold_shutdown_takes_a_running_runtime_task_with_it(
    make_fleet: Callable[..., Fleet],
) -> None:
    """A runtime task is the supervisor's own child, in its own session: killed by the worker."""
    fleet = make_fleet(Path(__file__).parent / "shutdown_dags")
    worker = fleet.start_worker()
    fleet.start_scheduler()
    fleet.trigger("runtime_sleeper", "r1")

    def sleeping() -> list[int]:
        return [pid for pid in _tree(worker.pid) if _cmdline(pid).startswith("sleep 61")]

    fleet.wait_for(lambda: sleeping(), 30, "the runtime task")
    [sleeper] = sleeping()

    os.kill(worker.pid, signal.SIGQUIT)

    try:
        worker.wait(30)
    except subprocess.TimeoutExpired:
        pytest.fail("the worker waited for its runtime task at SIGQUIT")
    assert wait_gone(sleeper)


def wait_gone(pid: int) -> bool:
    deadline = time.monotonic() + 10
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _gone(pid)
