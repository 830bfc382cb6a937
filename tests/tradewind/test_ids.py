"""Ids as Airflow validates them: a DAG or task id off the pattern fails its file in one line,
and a run id that could leave its DAG's log folder is refused."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tradewind.ids import InvalidId, check_key, check_run_id
from tradewind.loader import DagBag


@pytest.mark.parametrize(
    "run_id",
    [
        "manual__2026-12-04T15:27:57.812636+00:00",
        "r1",
        "a.b~c:d+e@f,g=h%20-i",
        "asset_triggered__2026..2027",  # a partition's run: '..' inside a name is only a name
        "x" * 250,
    ],
)
def test_run_ids_airflow_and_tradewind_make_are_valid(run_id: str) -> None:
    assert check_run_id(run_id) == run_id


@pytest.mark.parametrize(
    ("run_id", "words"),
    [
        ("..", "dots only"),
        (".", "dots only"),
        ("a/../b", "may hold only"),
        ("a/b", "may hold only"),
        ("a\\b", "may hold only"),
        ("", "must not be empty"),
        ("r\n1", "may hold only"),
        ("x" * 251, "over 250"),
    ],
)
def test_run_ids_that_could_leave_their_folder_are_refused(run_id: str, words: str) -> None:
    with pytest.raises(InvalidId) as refused:
        check_run_id(run_id)
    assert words in str(refused.value)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("key", ["etl", "a.b-c_d", "été", "g1.t__1"])
def test_keys_follow_airflows_pattern(key: str) -> None:
    assert check_key("dag_id", key) == key


@pytest.mark.parametrize("key", ["", "..", ".", "a/b", "a b", "x" * 251, 5])
def test_keys_off_the_pattern_are_refused(key: object) -> None:
    with pytest.raises(InvalidId, match="dag_id"):
        check_key("dag_id", key)


def test_a_dag_or_task_id_off_the_pattern_fails_its_file_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad_dag.py").write_text(
        textwrap.dedent(
            """
            from tradewind import DAG
            with DAG(".."):
                pass
            """
        )
    )
    (tmp_path / "bad_task.py").write_text(
        textwrap.dedent(
            """
            from tradewind import DAG, task

            @task(task_id="a/b")
            def t():
                pass

            with DAG("fine"):
                t()
            """
        )
    )
    (tmp_path / "good.py").write_text("from tradewind import DAG\nDAG('good')\n")
    bag = DagBag.collect(tmp_path)
    errors = {Path(path).name: error[0] for path, error in bag.import_errors.items()}
    assert errors == {
        "bad_dag.py": "DagDefinitionError: dag_id '..' must not be dots only",
        "bad_task.py": (
            "DagDefinitionError: DAG fine: task_id 'a/b' may hold only letters, digits, "
            "'_', '.' and '-'"
        ),
    }
    assert set(bag.dags) == {"good"}
