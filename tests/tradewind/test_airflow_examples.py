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


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> list[object]:
    examples = bench()
    try:
        wheels = examples.download_wheels(examples.DEFAULT_CACHE)
    except examples.WheelUnavailable as error:
        pytest.skip(f"Airflow's example DAGs are not available: {error}")
    result: list[object] = examples.run_examples(wheels, tmp_path_factory.mktemp("examples"))
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


@pytest.mark.timeout(1200)
def test_the_example_files_load(reports: list[object]) -> None:
    loading = {r.name for r in reports if r.error is None}  # type: ignore[attr-defined]
    errors = {r.name: r.error for r in reports if r.name in recorded()["loading"] - loading}  # type: ignore[attr-defined]

    assert errors == {}
    assert len(reports) == 67  # 47 of Airflow's, 20 of the standard provider's
