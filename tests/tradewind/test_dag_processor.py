"""The DAG file processor: each file imported in a real child process; a file that exits,
crashes, hangs or eats memory is its one-line import error, and the other files parse."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tradewind.dag_processor import (
    DagFolder,
    ProcessorLimits,
    call_in_child,
    parse_files,
)
from tradewind.loader import load_parsed_dags

GOOD = """
from tradewind import dag, task

@task
def step():
    pass

@dag(dag_id="{dag_id}")
def build():
    step() >> step()

build()
"""

#: What a hostile or careless DAG file does at import, and the cause its error names.
BAD = {
    "exits.py": ("import os\nos._exit(3)\n", "ended the process it ran in (exit code 3)"),
    "segfaults.py": (
        "import ctypes\nctypes.string_at(0)\n",
        "crashed the process it ran in (signal 11, SIGSEGV)",
    ),
    "loops.py": ("while True:\n    pass\n", "did not finish importing within 8 s"),
    "sleeps.py": ("import time\ntime.sleep(10**6)\n", "did not finish importing within 8 s"),
    "eats_memory.py": (
        "held = bytearray(1024 * 1024 * 1024)\n",
        "MemoryError: the import used more than 512 MiB",
    ),
    "sys_exit.py": ("import sys\nsys.exit(4)\n", "SystemExit: 4"),
}
#: Generous for a loaded machine: a child's interpreter starts within the first file's time.
LIMITS = ProcessorLimits(timeout_seconds=8.0, memory_mb=512, processes=2)


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    dags = tmp_path / "dags"
    dags.mkdir()
    for index in range(3):
        write(dags, f"good_{index}.py", GOOD.format(dag_id=f"good_{index}"))
    for name, (text, _) in BAD.items():
        write(dags, name, text)
    return dags


def test_bad_files_are_import_errors_naming_the_cause_and_good_files_parse(folder: Path) -> None:
    parsed = DagFolder.parse(folder, LIMITS)

    assert sorted(parsed.dags) == ["good_0", "good_1", "good_2"]
    errors = {Path(path).name: line for path, (line, _) in parsed.import_errors.items()}
    assert sorted(errors) == sorted(BAD)
    for name, (_, cause) in BAD.items():
        assert cause in errors[name], name
        assert "\n" not in errors[name]
    assert "TRADEWIND_DAG_FILE_PROCESSOR_TIMEOUT" in errors["loops.py"]


def test_a_child_sends_the_structure_the_loader_builds(folder: Path) -> None:
    path = folder / "good_0.py"
    [result] = parse_files([path], LIMITS)
    [expected] = load_parsed_dags(path)

    [stored] = result.dags
    assert (stored.dag_id, stored.fileloc) == ("good_0", str(path.resolve()))
    assert stored.structure == expected.structure
    assert stored.version_hash == expected.version_hash


def test_one_child_crashing_never_stops_the_files_after_it(tmp_path: Path) -> None:
    """One process, files taking turns: each crash is replaced by a fresh child."""
    paths = []
    for index in range(4):
        paths.append(write(tmp_path, f"a{index}_exits.py", "import os\nos._exit(5)\n"))
        paths.append(write(tmp_path, f"a{index}_good.py", GOOD.format(dag_id=f"d{index}")))
    one = ProcessorLimits(timeout_seconds=30.0, memory_mb=0, processes=1)

    results = parse_files(paths, one)

    assert [result.path for result in results] == [str(path) for path in paths]
    assert [bool(result.dags) for result in results] == [False, True] * 4


def test_a_file_sees_the_environment_of_the_process_that_parses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child takes the caller's environment as it is at the parse."""
    path = write(
        tmp_path,
        "env.py",
        GOOD.replace('dag_id="{dag_id}"', 'dag_id=__import__("os").environ["X"]'),
    )
    for value in ("first", "second"):
        monkeypatch.setenv("X", value)
        [result] = parse_files([path], LIMITS)
        assert [dag.dag_id for dag in result.dags] == [value]


def test_a_dag_id_defined_twice_refuses_the_later_file(tmp_path: Path) -> None:
    write(tmp_path, "a.py", GOOD.format(dag_id="shared"))
    write(tmp_path, "b.py", GOOD.format(dag_id="shared"))

    parsed = DagFolder.parse(tmp_path, LIMITS)

    assert parsed.dags["shared"].fileloc == str((tmp_path / "a.py").resolve())
    [(path, (line, _))] = parsed.import_errors.items()
    assert Path(path).name == "b.py"
    assert "DAG id 'shared' is already defined in" in line


def test_code_called_in_a_child_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The child imports the function it calls by its module's name: this file's package is
    # found on PYTHONPATH (children start with -P: not from the folder they run in).
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    marker = tmp_path / "ran"

    assert call_in_child(_touch, (marker,), LIMITS) is None
    assert marker.exists()
    assert call_in_child(os._exit, (7,), LIMITS) == (
        "the DAG code ended the process it ran in (exit code 7)"
    )
    stopped = call_in_child(_sleep_forever, (), LIMITS)  # a module's function: by name
    assert stopped is not None and "did not end within 8 s" in stopped


def _touch(path: Path) -> None:
    path.touch()


def _sleep_forever() -> None:
    import time

    time.sleep(10**6)


def test_a_child_dies_with_the_process_that_started_it(folder: Path) -> None:
    """A scheduler killed while a file hangs in its child leaves no child burning a core."""
    script = (
        "import sys; from pathlib import Path; "
        "from tradewind.dag_processor import ProcessorLimits, parse_files; "
        "parse_files([Path(sys.argv[1])], ProcessorLimits(600.0, 0, 1))"
    )
    parent = subprocess.Popen([sys.executable, "-c", script, str(folder / "loops.py")])
    try:
        children = Path(f"/proc/{parent.pid}/task/{parent.pid}/children")
        deadline = time.monotonic() + 60
        while not children.read_text().split() and time.monotonic() < deadline:
            time.sleep(0.05)
        [child] = [int(pid) for pid in children.read_text().split()]
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 30
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"
