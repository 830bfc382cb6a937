"""The standard provider's operators, sensors and decorators through ``dags test`` in a real
process (fork, supervisor, SQL store): adapted copies of the provider's example DAGs
(``standard_dags/``), each ending in the states Airflow ends it in, and ``standard_kinds``
for the arguments the examples do not set.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select

from state.core.db import session_scope
from state.core.models import TaskInstance
from tradewind.settings import get_settings

from .conftest import CliEnv

RunCli = Callable[..., subprocess.CompletedProcess[str]]
STANDARD_DAGS = Path(__file__).parent / "standard_dags"


@pytest.fixture
def standard_env(env: CliEnv, run_cli: RunCli) -> CliEnv:
    """The adapted examples as the DAGs folder, and the ``fs_default`` connection of FileSensor."""
    shutil.copytree(STANDARD_DAGS, env.dags, dirs_exist_ok=True)
    added = run_cli(
        "connections", "add", "fs_default", "--conn-type", "fs", "--extra", '{"path": "/tmp"}'
    )
    assert added.returncode == 0, added.stderr
    return env


def states(dag_id: str) -> dict[str, str]:
    with session_scope(get_settings().sql_url) as session:
        rows = session.scalars(select(TaskInstance).filter_by(dag_id=dag_id)).all()
        return {row.task_id: str(row.state) for row in rows}


def run_dag(run_cli: RunCli, dag_id: str) -> str:
    done = run_cli("dags", "test", dag_id, timeout=240)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


def test_the_python_operators_run_their_callables_with_the_context_they_name(
    standard_env: CliEnv, run_cli: RunCli
) -> None:
    output = run_dag(run_cli, "example_python_operator")

    assert set(states("example_python_operator").values()) == {"success"}
    assert "ds is 20" in output  # a context key named as a parameter
    assert "'dag_run'" in output  # and every key through **kwargs
    assert "query: CREATE TABLE Orders" in output  # templates_dict with templates_exts
    assert "async_sleep_for_1 result: slept 0.1" in output  # an async callable, awaited
    assert "Running task via" in output  # ExternalPythonOperator
    assert "virtualenv prefix:" in output and "Finished" in output


def test_the_branch_operators_follow_one_branch_each_and_the_joins_run(
    standard_env: CliEnv, run_cli: RunCli
) -> None:
    run_dag(run_cli, "example_branch_operator")
    found = states("example_branch_operator")

    for prefix in ("branch_", "follow_", "ext_py_", "venv_"):
        chosen = [t for t, s in found.items() if t.startswith(prefix) and s == "success"]
        skipped = [t for t, s in found.items() if t.startswith(prefix) and s == "skipped"]
        assert (len(chosen), len(skipped)) == (1, 3), found
    assert all(found[t] == "success" for t in ("join", "join_ext_python", "join_venv"))


def test_latest_only_lets_a_run_by_hand_go_on(standard_env: CliEnv, run_cli: RunCli) -> None:
    output = run_dag(run_cli, "latest_only")

    assert states("latest_only") == {"latest_only": "success", "task1": "success"}
    assert "run triggered by hand" in output


def test_the_sensors_wait_poke_or_reschedule_and_soft_fail(
    standard_env: CliEnv, run_cli: RunCli
) -> None:
    output = run_dag(run_cli, "example_sensors")
    found = states("example_sensors")

    soft_failed = {
        "timeout_after_second_date_in_the_future",
        "Sensor_fails_after_3_seconds",
        "failure_timeout_sensor_python",
        "week_day_sensor_failing_on_timeout",
    }
    assert {t for t, s in found.items() if s == "skipped"} == soft_failed
    assert {t for t, s in found.items() if s == "success"} == found.keys() - soft_failed
    assert "Sensor_fails_after_3_seconds try 1: up_for_reschedule" in output
    assert "found file /tmp/tradewind_file_for_testing" in output


def test_task_arguments_branches_short_circuits_and_decorators(
    standard_env: CliEnv, run_cli: RunCli
) -> None:
    output = run_dag(run_cli, "standard_kinds")
    found = states("standard_kinds")

    assert "on_execute_callback ran for kept" in output
    assert "kept: {'colour': 'red', 'task': 'kept'} not kept: None" in output  # do_xcom_push
    assert "Done. Returned value not shown" in output
    assert (found["inside"], found["outside"]) == ("success", "skipped")
    assert (found["is_today"], found["other_day"]) == ("success", "skipped")
    # ignore_downstream_trigger_rules=False: the direct downstream only; all_done runs.
    assert (found["after_stop"], found["after_all"]) == ("skipped", "success")
    assert "bash_args result: HELLO FROM BASH_ARGS IN TRADEWIND" in output
    assert found["past_moment"] == "success"
    assert 'doubled result: {"doubled": 42' in output
    assert (found["picked"], found["not_picked"]) == ("success", "skipped")
    assert "mapped total: 12" in output  # PythonOperator.partial(...).expand(op_args=...)
