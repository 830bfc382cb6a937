"""The loader: every DAG file of a folder is imported; a broken file never stops the others."""

from __future__ import annotations

import gc
import os
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tradewind import bytecode, dag_context
from tradewind.loader import DagBag, dag_files, load_dag_file, one_line_error
from tradewind.settings import reload_settings

GOOD = """
from tradewind import DAG, dag, task

@task
def hello():
    return "hi"

@dag(dag_id="{first}")
def first():
    hello() >> hello()

first()

with DAG("{second}"):
    hello()
"""

ONE_DAG = """
from tradewind import dag, task

@task
def step():
    pass

@dag(dag_id="{dag_id}")
def build():
    step()

build()
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def one_dag(dag_id: str) -> str:
    return ONE_DAG.format(dag_id=dag_id)


@pytest.fixture
def dags(tmp_path: Path) -> Path:
    folder = tmp_path / "dags"
    folder.mkdir()
    return folder


def test_a_good_file_yields_its_dags(dags: Path) -> None:
    path = write(dags, "good.py", GOOD.format(first="alpha", second="beta"))

    bag = DagBag.collect(dags)

    assert bag.import_errors == {}
    assert set(bag.dags) == {"alpha", "beta"}
    assert list(bag.dags["alpha"].tasks) == ["hello", "hello__1"]
    assert bag.dags["alpha"].fileloc == str(path.resolve())
    assert bag.dags["beta"].fileloc == str(path.resolve())


def test_loading_leaves_no_dag_registered(dags: Path) -> None:
    write(dags, "good.py", GOOD.format(first="alpha", second="beta"))
    before = len(dag_context.CREATED)

    DagBag.collect(dags)

    assert len(dag_context.CREATED) == before
    assert dag_context.current_dag() is None


def test_a_syntax_error_is_recorded_in_one_line_and_other_files_load(dags: Path) -> None:
    write(dags, "a_good.py", one_dag("before"))
    broken = write(dags, "broken.py", "x = 1\n\ndef oops(:\n    pass\n")
    write(dags, "z_good.py", one_dag("after"))

    bag = DagBag.collect(dags)

    assert set(bag.dags) == {"before", "after"}
    assert list(bag.import_errors) == [str(broken)]
    message, trace = bag.import_errors[str(broken)]
    assert message.startswith("SyntaxError: ")
    assert message.endswith("(broken.py, line 3)")
    assert "\n" not in message
    assert "SyntaxError" in trace


def test_an_exception_at_import_is_recorded_with_its_type(dags: Path) -> None:
    raising = write(
        dags,
        "raising.py",
        """
        def helper():
            raise ValueError("no region configured\\nsecond line")

        helper()
        """,
    )
    write(dags, "fine.py", one_dag("fine"))

    bag = DagBag.collect(dags)

    assert set(bag.dags) == {"fine"}
    message, trace = bag.import_errors[str(raising)]
    assert message == "ValueError: no region configured"
    assert "helper()" in trace


def test_a_malformed_dag_is_an_import_error(dags: Path) -> None:
    cyclic = write(
        dags,
        "cyclic.py",
        """
        from tradewind import DAG, task

        @task
        def step():
            pass

        with DAG("cyclic"):
            a = step()
            a >> a
        """,
    )

    bag = DagBag.collect(dags)

    assert bag.dags == {}
    assert bag.import_errors[str(cyclic)][0] == (
        "DagDefinitionError: DAG cyclic has a cycle: step -> step"
    )


def test_sys_exit_in_a_file_is_an_import_error(dags: Path) -> None:
    exiting = write(dags, "exiting.py", "import sys\nsys.exit(3)\n")

    bag = DagBag.collect(dags)

    assert bag.import_errors[str(exiting)][0] == "SystemExit: 3"


def test_a_duplicate_dag_id_in_a_second_file_is_an_error_of_that_file(dags: Path) -> None:
    first = write(dags, "a_first.py", one_dag("shared"))
    second = write(dags, "b_second.py", one_dag("shared"))

    bag = DagBag.collect(dags)

    assert bag.dags["shared"].fileloc == str(first.resolve())
    assert list(bag.import_errors) == [str(second)]
    message = bag.import_errors[str(second)][0]
    assert message.startswith("ValueError: DAG id 'shared' is already defined in ")
    assert message.endswith("a_first.py")


def test_files_and_folders_starting_with_underscore_or_dot_are_skipped(dags: Path) -> None:
    write(dags, "kept.py", one_dag("kept"))
    write(dags, "sub/nested.py", one_dag("nested"))
    write(dags, "_private.py", one_dag("private"))
    write(dags, ".hidden.py", one_dag("hidden"))
    write(dags, "_helpers/inside.py", one_dag("helpers"))
    write(dags, ".git/inside.py", "this is not python")
    write(dags, "sub/_skip.py", one_dag("sub_private"))
    write(dags, "notes.txt", "not a DAG file")

    bag = DagBag.collect(dags)

    assert bag.import_errors == {}
    assert set(bag.dags) == {"kept", "nested"}
    assert sorted(p.relative_to(dags).as_posix() for p in dag_files(dags)) == [
        "kept.py",
        "sub/nested.py",
    ]


def test_a_missing_folder_yields_nothing(tmp_path: Path) -> None:
    bag = DagBag.collect(tmp_path / "absent")

    assert bag.dags == {}
    assert bag.import_errors == {}


def test_the_same_file_loaded_twice_gives_a_fresh_module(dags: Path) -> None:
    path = write(
        dags,
        "counter.py",
        """
        from tradewind import DAG, task

        LOADS = []
        LOADS.append(1)

        @task
        def step():
            pass

        with DAG("counted") as counted:
            step()
        counted.params["loads"] = len(LOADS)
        """,
    )

    first = load_dag_file(path)
    second = load_dag_file(path)

    assert [d.dag_id for d in first] == ["counted"]
    assert [d.dag_id for d in second] == ["counted"]
    assert first[0] is not second[0]
    assert first[0].params == {"loads": 1}
    assert second[0].params == {"loads": 1}


def test_a_changed_file_is_seen_on_the_next_load(
    dags: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An edit in the same second that keeps the size passes the pyc check (mtime in whole
    # seconds + size): with bytecode caching on, the old DAG would come back from __pycache__.
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = write(dags, "changing.py", one_dag("old_id"))
    mtime_ns = path.stat().st_mtime_ns
    assert [d.dag_id for d in load_dag_file(path)] == ["old_id"]

    write(dags, "changing.py", one_dag("new_id"))
    os.utime(path, ns=(mtime_ns, mtime_ns))

    assert [d.dag_id for d in load_dag_file(path)] == ["new_id"]
    assert not (dags / "__pycache__").exists()


@pytest.fixture
def home_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path], None]]:
    def point(home: Path) -> None:
        monkeypatch.setenv("TRADEWIND_HOME", str(home))
        reload_settings()

    yield point
    monkeypatch.undo()
    reload_settings()


def test_compiled_files_are_kept_under_the_home_and_an_edit_is_always_seen(
    dags: Path, tmp_path: Path, home_at: Callable[[Path], None]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    home_at(home)
    path = write(dags, "kept.py", one_dag("first_id"))
    mtime_ns = path.stat().st_mtime_ns
    assert [d.dag_id for d in load_dag_file(path)] == ["first_id"]
    [cached] = (home / "cache" / "dag-bytecode").glob("kept-*.pyc")

    # The same size and mtime, another content: a new process (nothing in memory) sees it.
    write(dags, "kept.py", one_dag("other_id"))
    os.utime(path, ns=(mtime_ns, mtime_ns))
    bytecode._LOADED.clear()
    assert [d.dag_id for d in load_dag_file(path)] == ["other_id"]

    cached.write_bytes(b"not marshalled code")
    bytecode._LOADED.clear()
    assert [d.dag_id for d in load_dag_file(path)] == ["other_id"]
    assert not (dags / "__pycache__").exists()


def test_the_kept_code_is_used_when_the_content_matches(
    dags: Path, tmp_path: Path, home_at: Callable[[Path], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    home_at(home)
    path = write(dags, "stable.py", one_dag("stable"))
    load_dag_file(path)
    bytecode._LOADED.clear()

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("compiled again")

    monkeypatch.setattr(bytecode, "compile", refuse, raising=False)
    assert [d.dag_id for d in load_dag_file(path)] == ["stable"]


def test_without_a_home_nothing_is_written(
    dags: Path, tmp_path: Path, home_at: Callable[[Path], None]
) -> None:
    home_at(tmp_path / "no_home_yet")
    assert [d.dag_id for d in load_dag_file(write(dags, "one.py", one_dag("one")))] == ["one"]
    assert not (tmp_path / "no_home_yet").exists()


def test_the_garbage_collector_is_on_again_after_a_file_loads_or_fails(dags: Path) -> None:
    assert gc.isenabled()
    load_dag_file(write(dags, "fine.py", one_dag("fine")))
    assert gc.isenabled()
    with pytest.raises(ZeroDivisionError):
        load_dag_file(write(dags, "broken.py", "1 / 0\n"))
    assert gc.isenabled()


def test_a_dag_file_runs_with_its_own_future_flags_not_the_loaders(dags: Path) -> None:
    path = write(
        dags,
        "annotated.py",
        """
        from tradewind import DAG

        def typed(x: int) -> None: ...

        with DAG("annotated") as annotated:
            pass
        annotated.params["annotation"] = typed.__annotations__["x"].__name__
        """,
    )

    assert load_dag_file(path)[0].params == {"annotation": "int"}


def test_a_dag_file_sees_its_own_module_globals(dags: Path) -> None:
    path = write(
        dags,
        "globals_.py",
        """
        from tradewind import DAG

        with DAG("named") as named:
            pass
        named.params["file"] = __file__
        named.params["module"] = __name__
        """,
    )

    params = load_dag_file(path)[0].params

    assert params["file"] == str(path.resolve())
    assert params["module"].startswith("tradewind_dags_globals__")


def test_two_bags_of_one_folder_are_independent(dags: Path) -> None:
    write(dags, "good.py", GOOD.format(first="alpha", second="beta"))

    first, second = DagBag.collect(dags), DagBag.collect(dags)

    assert set(first.dags) == set(second.dags) == {"alpha", "beta"}
    assert first.dags["alpha"] is not second.dags["alpha"]


def test_one_line_error_of_an_exception_without_message() -> None:
    assert one_line_error(RuntimeError()) == "RuntimeError"
    assert one_line_error(KeyError("region")) == "KeyError: 'region'"
