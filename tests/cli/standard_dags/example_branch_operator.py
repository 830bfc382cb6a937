"""BranchPythonOperator and its sisters BranchExternalPythonOperator and
BranchPythonVirtualenvOperator."""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

import pendulum

from tradewind import DAG, Label, TriggerRule
from tradewind.standard.empty import EmptyOperator
from tradewind.standard.python import BranchPythonOperator, PythonOperator
from tradewind.standard.python_venv import (
    BranchExternalPythonOperator,
    BranchPythonVirtualenvOperator,
    ExternalPythonOperator,
    PythonVirtualenvOperator,
)

PATH_TO_PYTHON_BINARY = sys.executable

with DAG(
    dag_id="example_branch_operator",
    start_date=pendulum.datetime(2021, 1, 1, tz="UTC"),
    catchup=False,
    schedule="@daily",
    tags=["example", "example2"],
) as dag:
    run_this_first = EmptyOperator(task_id="run_this_first")

    options = ["a", "b", "c", "d"]

    branching = BranchPythonOperator(
        task_id="branching",
        python_callable=lambda: f"branch_{random.choice(options)}",
    )
    run_this_first >> branching

    join = EmptyOperator(task_id="join", trigger_rule=TriggerRule.NONE_FAILED_MIN_ONE_SUCCESS)

    for option in options:
        t = PythonOperator(task_id=f"branch_{option}", python_callable=lambda: print("Hello World"))
        empty_follow = EmptyOperator(task_id="follow_" + option)
        branching >> Label(option) >> t >> empty_follow >> join

    def branch_with_external_python(choices):
        import random

        return f"ext_py_{random.choice(choices)}"

    branching_ext_py = BranchExternalPythonOperator(
        task_id="branching_ext_python",
        python=PATH_TO_PYTHON_BINARY,
        python_callable=branch_with_external_python,
        op_args=[options],
    )
    join >> branching_ext_py

    join_ext_py = EmptyOperator(
        task_id="join_ext_python", trigger_rule=TriggerRule.NONE_FAILED_MIN_ONE_SUCCESS
    )

    def hello_world_with_external_python():
        print("Hello World from external Python")

    for option in options:
        t = ExternalPythonOperator(
            task_id=f"ext_py_{option}",
            python=PATH_TO_PYTHON_BINARY,
            python_callable=hello_world_with_external_python,
        )
        branching_ext_py >> Label(option) >> t >> join_ext_py

    VENV_CACHE_PATH = Path(tempfile.gettempdir()) / "tradewind-example-venvs"

    def branch_with_venv(choices):
        import random

        return f"venv_{random.choice(choices)}"

    branching_venv = BranchPythonVirtualenvOperator(
        task_id="branching_venv",
        requirements=[],
        venv_cache_path=VENV_CACHE_PATH,
        python_callable=branch_with_venv,
        op_args=[options],
    )
    join_ext_py >> branching_venv

    join_venv = EmptyOperator(
        task_id="join_venv", trigger_rule=TriggerRule.NONE_FAILED_MIN_ONE_SUCCESS
    )

    def hello_world_with_venv():
        print("Hello World in a venv")

    for option in options:
        t = PythonVirtualenvOperator(
            task_id=f"venv_{option}",
            requirements=[],
            venv_cache_path=VENV_CACHE_PATH,
            python_callable=hello_world_with_venv,
        )
        branching_venv >> Label(option) >> t >> join_venv
