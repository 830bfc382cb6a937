"""``tradewind dags check``: the per-file migration report; and a DAG file importing from
``airflow.*`` running under ``dags test`` (its task process resolves the same paths)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import Result

from .conftest import CliEnv, process_env

RunCli = Callable[..., subprocess.CompletedProcess[str]]

AIRFLOW2 = """
import datetime as dt

from airflow import DAG
from airflow.operators.bash_operator import BashOperator

with DAG("old_spellings", start_date=dt.datetime(2024, 1, 1), schedule_interval="@daily"):
    BashOperator(task_id="echo", bash_command="echo {{ ds }}")
"""

AIRFLOW3 = """
from airflow.sdk import dag, task
from airflow.providers.standard.operators.bash import BashOperator
from airflow.exceptions import AirflowException


@dag(schedule=None)
def airflow_paths():
    @task
    def check(value):
        if value != "through airflow.sdk":
            raise AirflowException(f"got {value!r}")

    said = BashOperator(task_id="say", bash_command="echo 'through airflow.sdk'")
    check(said.output)


airflow_paths()
"""


def _write(folder: Path, **files: str) -> None:
    for name, source in files.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(source))


def test_check_reports_each_file(env: CliEnv, cli: Callable[..., Result]) -> None:
    _write(env.dags, old=AIRFLOW2, new=AIRFLOW3, broken="from airflow.models import DagModel\n")

    done = cli("dags", "check", "--json")

    assert done.exit_code == 1  # a file is refused
    files = {f["file"]: f for f in json.loads(done.stdout)["files"]}
    assert files["new.py"]["status"] == "loads"
    assert files["new.py"]["dags"] == ["airflow_paths"]
    assert files["old.py"]["status"] == "warnings"
    assert "schedule_interval (Airflow 3: schedule)" in files["old.py"]["warnings"]
    assert files["broken.py"] == {
        "file": "broken.py",
        "status": "refused",
        "dags": [],
        "warnings": [],
        "error": "ImportError: DagModel (from airflow.models) is not supported by Tradewind",
    }
    table = cli("dags", "check").stdout
    assert "4 files: 2 load, 1 load with Airflow 2 spellings, 1 refused" in table


def test_check_passes_a_folder_that_loads(env: CliEnv, cli: Callable[..., Result]) -> None:
    _write(env.dags, new=AIRFLOW3)

    assert cli("dags", "check").exit_code == 0


def test_a_dag_importing_from_airflow_runs(env: CliEnv, run_cli: RunCli) -> None:
    _write(env.dags, new=AIRFLOW3)

    done = run_cli("dags", "test", "airflow_paths", timeout=180)

    assert done.returncode == 0, done.stdout + done.stderr


AIRFLOW2_FOLDER = Path(__file__).parents[1] / "integration" / "airflow2_dags"


def test_check_names_every_airflow2_spelling_of_a_folder(
    env: CliEnv, cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRADEWIND_DAGS_FOLDER", str(AIRFLOW2_FOLDER))

    done = cli("dags", "check", "--json")

    assert done.exit_code == 0, done.stdout
    files = {f["file"]: f for f in json.loads(done.stdout)["files"]}
    sales = " | ".join(files["daily_sales_report.py"]["warnings"])
    for spelling in (
        "airflow.operators.python_operator (Airflow 3: airflow.providers.standard.operators",
        "DummyOperator (Airflow 3: EmptyOperator)",
        "days_ago (from airflow.utils.dates)",
        "schedule_interval (Airflow 3: schedule)",
        "PythonOperator(provide_context=...)",
        "trigger_rule='none_failed_or_skipped' (Airflow 3: 'none_failed_min_one_success')",
        "execution_date (Airflow 3: logical_date)",
        "prev_ds",
    ):
        assert spelling in sales
    inventory = files["inventory_datasets.py"]
    assert inventory["dags"] == ["inventory_consumer", "inventory_snapshot"]
    assert (
        "Dataset (from airflow.datasets) (Airflow 3: Asset (airflow.sdk))" in inventory["warnings"]
    )


def test_a_working_folder_with_folders_named_like_tradewinds_packages_changes_nothing(
    env: CliEnv, tmp_path: Path
) -> None:
    # A data team's repository has its own `worker/`, `cli/` or `tradewind/` folders. The
    # processes Tradewind starts (the DAG-file children, the fork server, the helper) must import
    # Tradewind's packages, never a folder of the directory they were started in.
    _write(env.dags, new=AIRFLOW3)
    work = tmp_path / "a_repository"
    for name in ("tradewind", "worker", "cli", "state"):
        (work / name).mkdir(parents=True)
    command = str(Path(sys.executable).with_name("tradewind"))
    for args in (["dags", "check", "--json"], ["dags", "test", "airflow_paths"]):
        done = subprocess.run(
            [command, *args],
            env=process_env(env),
            cwd=work,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
