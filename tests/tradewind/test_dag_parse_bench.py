"""The parse benchmark's DAG files: Tradewind loads each, with the tasks asked for, and the
Airflow copy differs from it only in its import line."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tradewind.loader import DagBag

BENCH = Path(__file__).resolve().parents[2] / "bench" / "dag_parse.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dag_parse_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("tasks", [50, 13, 2])
def test_every_generated_file_loads_with_its_tasks(
    bench: ModuleType, tmp_path: Path, tasks: int
) -> None:
    folders = bench.write_folders(tmp_path, 3, tasks)
    bag = DagBag.collect(folders["tradewind"])

    assert bag.import_errors == {}
    assert sorted(bag.dags) == ["parse_bench_0000", "parse_bench_0001", "parse_bench_0002"]
    assert {len(dag.tasks) for dag in bag.dags.values()} == {tasks}
    if tasks == 50:
        built = bag.dags["parse_bench_0001"]
        assert len(built.task_groups) == 12
        assert sum(task.mapping is not None for task in built.tasks.values()) == 12
        assert built.structure()["params"]["region"] == "us"


def test_the_airflow_copy_differs_only_in_its_import(bench: ModuleType, tmp_path: Path) -> None:
    folders = bench.write_folders(tmp_path, 2, 50)
    for name in ("parse_bench_0000.py", "parse_bench_0001.py"):
        ours = (folders["tradewind"] / name).read_text().splitlines()
        theirs = (folders["airflow"] / name).read_text().splitlines()
        differ = [(a, b) for a, b in zip(ours, theirs, strict=True) if a != b]
        assert differ == [
            (
                "from tradewind import Param, dag, task, task_group",
                "from airflow.sdk import Param, dag, task, task_group",
            )
        ]


@pytest.mark.parametrize("tasks", [50, 13, 3])
def test_every_classic_file_loads_with_its_tasks(
    bench: ModuleType, tmp_path: Path, tasks: int
) -> None:
    folders = bench.write_folders(tmp_path, 2, tasks)
    bag = DagBag.collect(folders["classic"])

    assert bag.import_errors == {}
    assert bag.spellings == {}  # written as Airflow 3 files are
    assert sorted(bag.dags) == ["classic_bench_0000", "classic_bench_0001"]
    assert {len(dag.tasks) for dag in bag.dags.values()} == {tasks}


def test_the_airflow_sdk_copy_loads_in_tradewind(bench: ModuleType, tmp_path: Path) -> None:
    folders = bench.write_folders(tmp_path, 2, 13)
    ours, theirs = DagBag.collect(folders["tradewind"]), DagBag.collect(folders["airflow"])

    assert theirs.import_errors == {}
    assert {d: p.version_hash for d, p in theirs.parsed.items()} == {
        d: p.version_hash for d, p in ours.parsed.items()
    }
