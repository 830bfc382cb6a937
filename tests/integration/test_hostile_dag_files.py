"""One DAG file never stops the platform (DESIGN.md §7 "Hostile input", issue 26).

A folder with good DAGs beside files that call ``os._exit``, loop for ever and segfault at
import, on one scheduler and one worker over PostgreSQL + Redis: the good DAGs' runs succeed,
each bad file is an import error naming its cause, the scheduler lives on. A file that hangs
only on the worker (an environment variable only the worker has) fails its try with one line
while the other DAG's tries run on the same worker, in its other slot.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from state.core import DagImportError, session_scope
from state.engine import create_run
from tests.integration.conftest import Fleet
from tradewind.settings import reload_settings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
PG_DATABASE_PREFIX = "tw_hostile_dags_"

STEADY = """
from tradewind import dag, task

@task
def one() -> int:
    return 1

@task
def two(value: int) -> int:
    return value + 1

@dag(dag_id="{dag_id}", max_active_runs=4)
def build():
    two(one())

build()
"""

HANGS_ON_WORKER = """
import os
import time

from tradewind import dag, task

if os.environ.get("HANG_ON_WORKER"):
    time.sleep(10**6)

@task
def never_starts() -> None:
    pass

@dag(dag_id="hangs_on_worker")
def build():
    never_starts()

build()
"""

#: Each bad file, and what its import error says.
BAD = {
    "exits.py": ("import os\nos._exit(3)\n", "ended the process it ran in (exit code 3)"),
    "loops.py": ("while True:\n    pass\n", "did not finish importing within 10 s"),
    "segfaults.py": (
        "import ctypes\nctypes.string_at(0)\n",
        "crashed the process it ran in (signal 11, SIGSEGV)",
    ),
}
#: The scheduler's (and this process's) limit; the worker's is longer, so that its slot is
#: held long enough to see the other slot run.
SCHEDULER_TIMEOUT = "10"
WORKER_TIMEOUT = "45"


@pytest.fixture
def dags(tmp_path: Path) -> Path:
    folder = tmp_path / "dags"
    folder.mkdir()
    for dag_id in ("steady", "also_steady"):
        (folder / f"{dag_id}.py").write_text(textwrap.dedent(STEADY.format(dag_id=dag_id)))
    (folder / "hangs_on_worker.py").write_text(textwrap.dedent(HANGS_ON_WORKER))
    for name, (source, _) in BAD.items():
        (folder / name).write_text(source)
    return folder


@pytest.fixture
def fleet(
    make_fleet: Callable[..., Fleet], dags: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Fleet]:
    # make_fleet syncs the folder in this process first: the same limit as the scheduler's.
    monkeypatch.setenv("TRADEWIND_DAG_FILE_PROCESSOR_TIMEOUT", SCHEDULER_TIMEOUT)
    reload_settings()
    made = make_fleet(dags, TRADEWIND_DAG_FILE_PROCESSOR_TIMEOUT=SCHEDULER_TIMEOUT)
    yield made
    monkeypatch.undo()
    reload_settings()


def _start_worker_that_hangs_on(fleet: Fleet) -> None:
    scheduler_env = fleet.env
    fleet.env = scheduler_env | {
        "HANG_ON_WORKER": "1",
        "TRADEWIND_DAG_FILE_PROCESSOR_TIMEOUT": WORKER_TIMEOUT,
    }
    try:
        fleet.start_worker("w1", concurrency=2)
    finally:
        fleet.env = scheduler_env


def _import_errors(url: str) -> dict[str, str]:
    with session_scope(url) as session:
        rows = session.scalars(select(DagImportError))
        return {Path(row.fileloc).name: row.error for row in rows}


def test_bad_files_are_import_errors_and_everything_else_runs(fleet: Fleet) -> None:
    _start_worker_that_hangs_on(fleet)
    scheduler = fleet.start_scheduler()
    with session_scope(fleet.url) as session:
        create_run(session, "hangs_on_worker", run_id="r1")
    # Its try holds one slot while the worker imports its file in a child, up to 45 s.
    fleet.wait_for(
        lambda: fleet.task_states("hangs_on_worker", "r1")["never_starts"][0] == "running",
        timeout=60,
        what="the try of hangs_on_worker to start",
    )
    with session_scope(fleet.url) as session:
        for dag_id in ("steady", "also_steady"):
            create_run(session, dag_id, run_id="r1")

    # The other slot runs them meanwhile: no lock held by the file being imported.
    assert fleet.wait_run("steady", "r1", timeout=120) == "success"
    assert fleet.wait_run("also_steady", "r1", timeout=120) == "success"
    assert fleet.task_states("hangs_on_worker", "r1")["never_starts"][0] == "running"

    assert fleet.wait_run("hangs_on_worker", "r1", timeout=120) == "failed"
    ti = fleet.task_instances("hangs_on_worker", "r1")["never_starts"]
    assert ti.error is not None
    assert ti.error.startswith(f"DAG file {Path(fleet.env['TRADEWIND_DAGS_FOLDER'])}")
    assert f"did not finish importing within {WORKER_TIMEOUT} s" in ti.error
    assert "\n" not in ti.error

    errors = _import_errors(fleet.url)
    assert sorted(errors) == sorted(BAD)
    for name, (_, cause) in BAD.items():
        assert cause in errors[name], name
    assert scheduler.poll() is None  # alive
    log = fleet.log("scheduler")
    assert "exits.py does not import: the file's import ended the process" in log


def test_dags_list_and_check_name_the_bad_files_and_go_on(dags: Path, tmp_path: Path) -> None:
    (dags / "eats_memory.py").write_text("held = bytearray(8 * 1024**3)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRADEWIND_")}
    env |= {
        "TRADEWIND_HOME": str(tmp_path / "home"),
        "TRADEWIND_DAGS_FOLDER": str(dags),
        "TRADEWIND_DAG_FILE_PROCESSOR_TIMEOUT": SCHEDULER_TIMEOUT,
    }

    def tradewind(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "cli", *args]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)

    listed = tradewind("dags", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    document = json.loads(listed.stdout)
    assert sorted(dag["dag_id"] for dag in document["dags"]) == [
        "also_steady",
        "hangs_on_worker",
        "steady",
    ]
    errors = {Path(e["fileloc"]).name: e["error"] for e in document["import_errors"]}
    assert sorted(errors) == sorted([*BAD, "eats_memory.py"])
    assert "the import used more than 2048 MiB" in errors["eats_memory.py"]

    checked = tradewind("dags", "check", "--json")
    assert checked.returncode == 1  # files are refused
    report = {entry["file"]: entry for entry in json.loads(checked.stdout)["files"]}
    assert report["steady.py"]["status"] == "loads"
    for name, (_, cause) in BAD.items():
        assert report[name]["status"] == "refused"
        assert cause in report[name]["error"]
