"""The yardstick as a test: Airflow 3.3's example DAGs and the standard provider's, copied
unchanged, load and end under ``tradewind dags test`` in the states Airflow 3.3.2 ends them in
(``bench/airflow_examples.py`` does the work and prints the full table; Airflow's own outcomes are
``bench/results/airflow_reference.json``, from ``bench/airflow_reference.py``).

The wheels are downloaded once into ``~/.cache/tradewind/airflow-examples``; without them (no
index, no network) the test is skipped with the reason.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tradewind.loader import DagBag
from tradewind.settings import reload_settings

BENCH = Path(__file__).resolve().parents[2] / "bench" / "airflow_examples.py"
RESULTS = BENCH.parent / "results" / "airflow_examples.json"


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("airflow_examples", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["airflow_examples"] = module
    spec.loader.exec_module(module)
    return module


def recorded() -> dict[str, set[str]]:
    """What the last full run of the yardstick recorded: the files that load, the DAGs that end
    as in Airflow. A change that breaks one of them fails the test."""
    document = json.loads(RESULTS.read_text())
    files = document["files"]
    return {
        "loading": {f["name"] for f in files if f["error"] is None},
        "as_in_airflow": {
            d["dag_id"]
            for f in files
            for d in f["dags"]
            if d["expected"] is not None
            and d["outcome"] == d["expected"]
            and not d.get("tasks_differ")
        },
    }


#: The files whose DAGs the test runs (the bench runs them all): one or two per feature, so that
#: the suite stays short on a loaded machine and a feature removed still fails it.
SAMPLE = [
    "example_complex",
    "example_dynamic_task_mapping_with_no_taskflow_operators",
    "example_failed_dag",
    "example_nested_branch_dag",
    "example_setup_teardown",
    "example_workday_timetable",
    "example_xcom",
    "example_bash_operator",
    "example_python_operator",
    "example_trigger_controller_dag",
]


def wheels_or_skip(examples: ModuleType) -> list[Path]:
    try:
        found: list[Path] = examples.download_wheels(examples.DEFAULT_CACHE)
    except examples.WheelUnavailable as error:
        pytest.skip(f"Airflow's example DAGs are not available: {error}")
    return found


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> list[object]:
    examples = bench()
    wheels = wheels_or_skip(examples)
    work = tmp_path_factory.mktemp("examples")
    result: list[object] = examples.run_examples(wheels, work, SAMPLE)
    return result


@pytest.mark.timeout(1200)
def test_the_examples_end_as_in_airflow(reports: list[object]) -> None:
    outcomes = [outcome for report in reports for outcome in report.dags]  # type: ignore[attr-defined]

    ran = {outcome.dag_id for outcome in outcomes if outcome.as_in_airflow}
    lost = {
        o.dag_id: f"{o.outcome} (Airflow: {o.expected}) {o.detail} {o.tasks_differ}"
        for o in outcomes
        if o.dag_id in recorded()["as_in_airflow"] - ran
    }
    assert not lost


def test_the_example_files_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    examples = bench()
    folder = tmp_path / "dags"
    names = examples.write_dags_folder(wheels_or_skip(examples), folder)
    bag = DagBag(folder)
    with monkeypatch.context() as patched:
        patched.setenv("TRADEWIND_DAGS_FOLDER", str(folder))  # airflow.example_dags
        reload_settings()
        for name in names:
            bag.add_file(folder / name)
    reload_settings()  # the environment as it was
    failing = {str(folder / name) for name in names} & bag.import_errors.keys()
    errors = {
        name: bag.import_errors[str(folder / name)][0]
        for name in recorded()["loading"]
        if str(folder / name) in failing
    }

    assert errors == {}
    assert len(names) == 67  # 47 of Airflow's, 20 of the standard provider's
