"""Control flow through the real fleet (scheduler and Celery worker on PostgreSQL + Redis):
branches and short circuits, every trigger rule, setups and teardowns."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.conftest import Fleet

DAGS = Path(__file__).parent / "control_flow_dags"
RUNS = [
    "branching",
    "bad_branch",
    "short_circuit_all",
    "short_circuit_direct",
    "rules",
    "teardown_fails",
    "work_fails",
    "strict_teardown_fails",
]


def states(fleet: Fleet, dag_id: str) -> dict[str, str]:
    return {task_id: state for task_id, (state, _) in fleet.task_states(dag_id, "r1").items()}


@pytest.fixture
def finished(make_fleet: Callable[..., Fleet]) -> Fleet:
    """Every control-flow DAG of the folder triggered once and run to its end."""
    fleet = make_fleet(DAGS)
    fleet.start_worker()
    fleet.start_scheduler()
    for dag_id in RUNS:
        fleet.trigger(dag_id, "r1")
    for dag_id in RUNS:
        fleet.wait_run(dag_id, "r1", timeout=120)
    return fleet


def test_control_flow_runs_as_in_airflow(finished: Fleet) -> None:
    fleet = finished
    # A branch: the path not followed is skipped, its skip carried on by all_success, and the
    # join (none_failed_min_one_success) runs.
    assert fleet.run_state("branching", "r1") == "success"
    assert states(fleet, "branching") == {
        "pick": "success",
        "left": "success",
        "right": "skipped",
        "after_right": "skipped",
        "join": "success",
        "final": "success",
    }
    # A short circuit skips everything downstream, or its direct downstream only.
    assert states(fleet, "short_circuit_all") == {"gate": "success", "a": "skipped", "b": "skipped"}
    assert states(fleet, "short_circuit_direct") == {
        "gate": "success",
        "a": "skipped",
        "b": "success",
    }
    assert fleet.run_state("short_circuit_all", "r1") == "success"

    # After one success, one failure and one skip, each rule as Airflow decides it.
    assert states(fleet, "rules") == {
        "ok": "success",
        "broken": "failed",
        "skipped": "skipped",
        "all_success": "upstream_failed",
        "all_failed": "skipped",
        "all_done": "success",
        "all_done_min_one_success": "success",
        "all_done_setup_success": "success",
        "all_skipped": "skipped",
        "one_success": "success",
        "one_failed": "success",
        "one_done": "success",
        "none_failed": "upstream_failed",
        "none_failed_min_one_success": "upstream_failed",
        "none_skipped": "skipped",
        "always": "success",
    }

    # A teardown runs whatever its work did, and its failure does not fail the run unless asked.
    assert states(fleet, "work_fails") == {"make": "success", "work": "failed", "remove": "success"}
    assert fleet.run_state("work_fails", "r1") == "failed"
    assert states(fleet, "teardown_fails")["remove"] == "failed"
    assert fleet.run_state("teardown_fails", "r1") == "success"
    assert fleet.run_state("strict_teardown_fails", "r1") == "failed"
    assert json.loads(fleet.xcom("work_fails", "r1", "remove") or "null") == "removed cluster-1"

    # A branch naming a task its DAG does not have fails with one line; the rest of the folder
    # ran as above.
    pick = fleet.task_instances("bad_branch", "r1")["pick_unknown"]
    assert pick.state == "failed"
    assert pick.error is not None and "\n" not in pick.error
    assert "'nowhere'" in pick.error and "bad_branch" in pick.error
    assert fleet.task_states("bad_branch", "r1")["x"][0] == "upstream_failed"
