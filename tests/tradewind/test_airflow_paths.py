"""Airflow's import paths in a DAG file resolve to Tradewind's names (tradewind/airflow_paths)."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tradewind
from tradewind.loader import DagBag
from tradewind.settings import reload_settings

ROOT = Path(__file__).resolve().parents[2]

AIRFLOW3_FILE = """
import datetime as dt

from airflow import DAG
from airflow.models import Variable
from airflow.models.baseoperator import chain
from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import task
from airflow.sdk.definitions.asset import Asset
from airflow.utils.task_group import TaskGroup
from airflow.utils.trigger_rule import TriggerRule

with DAG("airflow3_paths", start_date=dt.datetime(2024, 1, 1), schedule=None) as dag:
    @task(outlets=[Asset("s3://bucket/x")])
    def produce():
        return 1

    with TaskGroup("group"):
        last = BashOperator(task_id="echo", bash_command="echo", trigger_rule=TriggerRule.ALL_DONE)
    chain(produce(), last)
"""

AIRFLOW2_FILE = """
import datetime as dt

from airflow import DAG
from airflow.datasets import Dataset
from airflow.operators.bash_operator import BashOperator

with DAG("{dag_id}", start_date=dt.datetime(2024, 1, 1), schedule_interval="@daily") as dag:
    BashOperator(task_id="echo", bash_command="echo hi", outlets=[Dataset("s3://b/{dag_id}")])
"""


def _bag(folder: Path, files: dict[str, str]) -> DagBag:
    for name, source in files.items():
        (folder / name).write_text(textwrap.dedent(source))
    return DagBag.collect(folder)


def test_a_dag_file_importing_from_airflow_loads_with_tradewind_names(tmp_path: Path) -> None:
    bag = _bag(tmp_path, {"paths.py": AIRFLOW3_FILE})

    assert bag.import_errors == {}
    dag = bag.dags["airflow3_paths"]
    assert isinstance(dag, tradewind.DAG)
    assert dag.get_task("group.echo").trigger_rule == "all_done"
    assert bag.spellings == {}


def test_airflow2_spellings_load_with_one_warning_line_per_file(tmp_path: Path) -> None:
    files = {f"{n}.py": AIRFLOW2_FILE.format(dag_id=n) for n in ("first", "second")}
    bag = _bag(tmp_path, files)

    assert bag.import_errors == {}
    assert bag.dags["first"].schedule == "@daily"
    for name in files:  # the second file imports the same modules: its line names them too
        line = bag.warning_line(str(tmp_path / name)) or ""
        assert "\n" not in line
        assert "schedule_interval (Airflow 3: schedule)" in line
        assert "airflow.operators.bash_operator (Airflow 3: airflow.providers.standard" in line
        assert "Dataset (from airflow.datasets) (Airflow 3: Asset (airflow.sdk))" in line


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "from airflow.models import DagModel",
            "ImportError: DagModel (from airflow.models) is not supported by Tradewind",
        ),
        (
            "from airflow.sdk import HITLTrigger",
            "ImportError: HITLTrigger (from airflow.sdk) is not supported by Tradewind",
        ),
        (
            "from airflow.contrib.operators.ssh_operator import SSHOperator",
            "ModuleNotFoundError: No module named 'airflow.contrib' (not one of the Airflow paths",
        ),
    ],
)
def test_a_name_tradewind_lacks_fails_its_file_in_one_line(
    tmp_path: Path, source: str, message: str
) -> None:
    bag = _bag(tmp_path, {"lacking.py": source + "\n"})

    error = bag.import_errors[str(tmp_path / "lacking.py")][0]
    assert error.startswith(message), error
    assert "\n" not in error


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, **env}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_tradewind_installs_no_airflow_package() -> None:
    files = importlib.metadata.files("tradewind") or []
    assert not [f for f in files if f.parts[0] == "airflow"]
    done = _python("import importlib.util, tradewind; print(importlib.util.find_spec('airflow'))")
    assert done.stdout.strip() == "None", done.stderr  # importing Tradewind hooks nothing


LOAD = """
import logging, sys
from pathlib import Path
from tradewind.loader import DagBag
from tradewind.settings import reload_settings
logging.basicConfig(format="%(message)s")
bag = DagBag.collect(Path(sys.argv[1]))
print(sorted(bag.dags), list(bag.import_errors.values())[:1])
"""


def test_imports_left_to_airflow_when_asked(tmp_path: Path) -> None:
    (tmp_path / "paths.py").write_text(AIRFLOW3_FILE)
    done = _python(
        LOAD.replace("sys.argv[1]", repr(str(tmp_path))), TRADEWIND_AIRFLOW_IMPORTS="airflow"
    )

    assert "No module named 'airflow'" in done.stdout, done.stderr


def test_an_installed_airflow_is_named_in_one_line(tmp_path: Path) -> None:
    site = tmp_path / "site"
    info = site / "apache_airflow_core-3.3.2.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: apache-airflow-core\nVersion: 3.3.2\n"
    )
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "paths.py").write_text(AIRFLOW3_FILE)
    done = _python(
        LOAD.replace("sys.argv[1]", repr(str(dags))),
        PYTHONPATH=f"{site}{os.pathsep}{ROOT}",
    )

    assert "['airflow3_paths'] []" in done.stdout, done.stderr
    lines = [line for line in done.stderr.splitlines() if "apache-airflow" in line]
    assert lines == [
        "apache-airflow 3.3.2 is installed: in Tradewind's processes, DAG files' airflow.* "
        "imports resolve to Tradewind's names (set TRADEWIND_AIRFLOW_IMPORTS=airflow to import "
        "Airflow's own)"
    ]


def test_airflow_example_dags_follows_the_dags_folder_in_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``airflow.example_dags`` is the DAGs folder of the settings in force at each import."""
    bag = DagBag(tmp_path)
    for name in ("first", "second"):
        (tmp_path / name / f"helpers_{name}").mkdir(parents=True)
        (tmp_path / name / f"helpers_{name}" / "__init__.py").write_text(f"WHO = {name!r}\n")
        (tmp_path / name / "uses.py").write_text(
            f"from airflow.example_dags.helpers_{name} import WHO\nassert WHO == {name!r}\n"
        )
        monkeypatch.setenv("TRADEWIND_DAGS_FOLDER", str(tmp_path / name))
        reload_settings()
        bag.add_file(tmp_path / name / "uses.py")
        assert bag.import_errors.get(str(tmp_path / name / "uses.py")) is None
    monkeypatch.delenv("TRADEWIND_DAGS_FOLDER")
    reload_settings()
