"""The Airflow 3 yardstick as a test: Airflow 3.3's ``airflow.sdk``-only example DAGs, imports
swapped to ``tradewind``, load and run as in Airflow (``bench/airflow_examples.py`` does the
work and prints the full table).

The wheel is downloaded once into ``~/.cache/tradewind/airflow-examples``; without it (no
index, no network) the test is skipped with the reason.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "airflow_examples.py"

#: The example DAGs that run as in Airflow; a feature removed makes one of them fail.
RUNNING = {
    "aggregate_regional_sales",
    "asset1_producer",
    "asset2_producer",
    "asset_alias_example_alias_consumer",
    "asset_alias_example_alias_producer",
    "asset_s3_bucket_consumer",
    "asset_s3_bucket_producer",
    "clean_and_combine_player_stats",
    "compute_player_odds",
    "consumes_asset_decorator",
    "daily_inference",
    "daily_team_a_rollup",
    "example_asset_state_store_consumer",
    "example_asset_state_store_producer",
    "example_dynamic_task_mapping",
    "example_dynamic_task_mapping_with_no_taskflow_operators",
    "example_failed_dag",  # fails, as it does in Airflow
    "example_params_trigger_ui",  # @task.branch
    "example_params_ui_tutorial",
    "example_setup_teardown_taskflow",  # @setup / @teardown
    "example_simplest_dag",
    "example_task_group_decorator",
    "example_task_group_mapping",
    "example_task_mapping_second_order",
    "example_task_state_store",
    "example_task_state_store_async",
    "example_task_state_store_mapped",
    "ingest_region_stats",
    "ingest_regional_sales",
    "ingest_team_a_player_stats",
    "live_region_player_stats",
    "monthly_team_a_rollup",
    "multi_region_player_stats",
    "player_odds_quality_check_wont_ever_to_trigger",
    "regional_stats_breakdown",
    "scatter_live_region_to_segments",
    "segment_region_stats_early_rollup",
    "segment_region_stats_rollup",
    "summarize_live_region_stats",
    "team_b_player_stats",
    "team_c_player_stats",
    "trailing_week_inference",
    "train_weekly_model",
    "tutorial_taskflow_api",
    "tutorial_taskflow_api_virtualenv",  # @task.virtualenv
    "tutorial_taskflow_templates",
}
#: Loaded, not run: their tasks reach the internet.
LOADED_ONLY = {"example_retry_policy", "tutorial_objectstorage"}


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("airflow_examples", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["airflow_examples"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> list[object]:
    examples = bench()
    try:
        wheel = examples.download_wheel(examples.DEFAULT_CACHE)
    except examples.WheelUnavailable as error:
        pytest.skip(f"Airflow's example DAGs are not available: {error}")
    result: list[object] = examples.run_examples(wheel, tmp_path_factory.mktemp("examples"))
    return result


@pytest.mark.timeout(900)
def test_the_examples_run_as_in_airflow(reports: list[object]) -> None:
    outcomes = [outcome for report in reports for outcome in report.dags]  # type: ignore[attr-defined]

    ran = {outcome.dag_id for outcome in outcomes if outcome.as_in_airflow}
    failing = {o.dag_id: o.detail for o in outcomes if o.dag_id in RUNNING - ran}
    assert not failing
    assert {o.dag_id for o in outcomes if o.expected is None} == LOADED_ONLY


@pytest.mark.timeout(900)
def test_every_example_file_loads(reports: list[object]) -> None:
    errors = {r.name: r.error for r in reports if r.error is not None}  # type: ignore[attr-defined]

    assert errors == {}
    assert len(reports) == 20
