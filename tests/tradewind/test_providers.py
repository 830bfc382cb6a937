"""Providers without Airflow: the installer's refusals, the names providers import, the registry.

The end-to-end runs of real providers are tests/integration/test_providers_fleet.py; here, the
installer runs pip against a folder of wheels made on the spot (``PIP_NO_INDEX``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from tradewind.airflow_paths.names import AIRFLOW_VERSION
from tradewind.connections import Connection
from tradewind.exceptions import AirflowException
from tradewind.providers.install import ProviderInstallError, parse_provider, plan_providers

ROOT = Path(__file__).resolve().parents[2]


def _wheel(folder: Path, name: str, version: str, requires: list[str]) -> Path:
    stem = name.replace("-", "_")
    path = folder / f"{stem}-{version}-py3-none-any.whl"
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{stem}-{version}.dist-info/METADATA", "\n".join(lines) + "\n")
        archive.writestr(f"{stem}-{version}.dist-info/WHEEL", "Wheel-Version: 1.0\n")
        archive.writestr(f"{stem}-{version}.dist-info/RECORD", "")
    return path


@pytest.fixture
def local_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    return wheels


def test_a_provider_name_may_be_short_and_airflow_itself_is_refused() -> None:
    assert parse_provider("postgres==7.1.1").name == "apache-airflow-providers-postgres"
    assert str(parse_provider("apache-airflow-providers-http>=6").specifier) == ">=6"
    for itself in ("apache-airflow", "apache-airflow-core==3.3.2", "apache_airflow_task_sdk"):
        with pytest.raises(ProviderInstallError, match="is Airflow itself"):
            parse_provider(itself)
    with pytest.raises(ProviderInstallError, match="not a package name"):
        parse_provider("postgres==")


def test_the_plan_drops_airflow_and_follows_the_providers_it_requires(
    local_index: Path, tmp_path: Path
) -> None:
    _wheel(
        local_index,
        "apache-airflow-providers-fruit",
        "1.0.0",
        [
            "apache-airflow>=2.11.0",
            "apache-airflow-providers-basket>=2",
            "sqlparse>=0.5",
            "pywin32>=300; sys_platform == 'win32'",
            "boto3; extra == 'aws'",
        ],
    )
    _wheel(local_index, "apache-airflow-providers-basket", "2.1.0", ["apache-airflow-core>=3"])
    plan = plan_providers("fruit", sys.executable, tmp_path / "plan", upgrade=True)
    assert plan.versions == {
        "apache-airflow-providers-fruit": "1.0.0",
        "apache-airflow-providers-basket": "2.1.0",
    }
    assert [str(r) for r in plan.requirements] == ["sqlparse>=0.5"]


def test_a_provider_for_another_airflow_is_refused_in_one_line(
    local_index: Path, tmp_path: Path
) -> None:
    _wheel(local_index, "apache-airflow-providers-old", "1.0.0", ["apache-airflow<3,>=2.4"])
    with pytest.raises(ProviderInstallError) as error:
        plan_providers("old", sys.executable, tmp_path / "plan")
    assert str(error.value) == (
        "apache-airflow-providers-old 1.0.0 needs apache-airflow<3,>=2.4, and Tradewind "
        f"answers as Airflow {AIRFLOW_VERSION}"
    )


def test_the_cli_refuses_in_one_line(local_index: Path) -> None:
    runner = CliRunner()
    for argv, words in (
        (["apache-airflow"], "is Airflow itself"),
        (["fab"], "cannot run on Tradewind: it is an auth manager"),
        (["no-such-provider"], "apache-airflow-providers-no-such-provider"),
    ):
        result = runner.invoke(app, ["providers", "install", *argv])
        assert result.exit_code != 0
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], lines


def test_an_installed_provider_serves_its_own_modules(tmp_path: Path) -> None:
    """A row below airflow.providers stands in only while that provider is not installed."""
    module = tmp_path / "airflow" / "providers" / "smtp" / "operators"
    module.mkdir(parents=True)
    (module / "smtp.py").write_text("EmailOperator = 'the provider'\n")
    code = """
        from tradewind.airflow_paths import install
        install()
        import airflow
        from airflow.providers.smtp.operators.smtp import EmailOperator
        from airflow.providers.standard.operators.empty import EmptyOperator
        print(airflow.__version__, EmailOperator, EmptyOperator.__module__)
    """
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.stdout.split() == [
        AIRFLOW_VERSION,
        "the",
        "provider",
        "tradewind.standard.empty",
    ], result.stderr


def test_a_connection_reads_as_airflow_s() -> None:
    connection = Connection("c", "postgresql", "db", "me", "pw", "fruit", 5432, {"sslmode": "off"})
    assert connection.extra_dejson == {"sslmode": "off"}
    assert connection.get_extra() == '{"sslmode": "off"}'
    with pytest.raises(AirflowException, match="no installed provider has a hook"):
        Connection("c", "nothing-serves-this").get_hook()


def test_provider_helpers_behave_as_airflow_s() -> None:
    from tradewind.providers.compat import NOTSET, chunks, merge_dicts, prune_dict

    assert list(chunks([1, 2, 3, 4, 5], 2)) == [[1, 2], [3, 4], [5]]
    assert merge_dicts({"a": {"b": 1}}, {"a": {"c": 2}}) == {"a": {"b": 1, "c": 2}}
    assert prune_dict({"a": None, "b": {"c": None, "d": 1}, "e": [None, 2]}) == {
        "b": {"d": 1},
        "e": [2],
    }
    assert repr(NOTSET) == "NOTSET" and not NOTSET


def test_the_airflow_helpers_providers_import_are_served() -> None:
    """google's BigQuery hook (the first of its hooks) imports most of these at its top, its
    Dataproc operators declare ``StartTriggerArgs``, its Dataflow hook bounds calls with
    ``timeout``; snowflake's decorator asks ``is_async_callable``; databricks raises
    ``TaskInstanceNotFound`` and names ``TaskInstanceKey``; cncf-kubernetes reads
    ``airflow.settings`` and ``validate_key``."""
    code = """
        from tradewind.airflow_paths import install
        install()
        from airflow.sdk.definitions._internal.types import NOTSET, is_arg_set
        from airflow.triggers.base import StartTriggerArgs
        from airflow.utils.hashlib_wrapper import md5
        from airflow.utils.helpers import convert_camel_to_snake
        from airflow.utils.types import DagRunType
        print(md5(b"apple").hexdigest(), convert_camel_to_snake("jobReferenceId"))
        print(DagRunType.SCHEDULED == "scheduled", is_arg_set(NOTSET))
        print(StartTriggerArgs("m.T", "execute_complete").trigger_cls)
        from functools import partial
        from airflow.sdk.bases.decorator import is_async_callable
        async def fetch(n): ...
        print(is_async_callable(partial(fetch, 1)), is_async_callable(print))
        import time
        from airflow.exceptions import AirflowTaskTimeout, TaskInstanceNotFound
        from airflow.providers.standard.exceptions import DuplicateStateError
        from airflow.settings import AIRFLOW_HOME, pod_mutation_hook
        from airflow.utils.timeout import timeout
        try:
            with timeout(0.2, "the job took too long"):
                time.sleep(30)
        except AirflowTaskTimeout as error:
            print(str(error).split(",")[0].replace(" ", "_"))
        with timeout(30):
            pass
        print(issubclass(TaskInstanceNotFound, Exception), DuplicateStateError.__name__)
        print(AIRFLOW_HOME == "/srv/af", pod_mutation_hook(None))
        from airflow.models.taskinstance import TaskInstanceKey
        from airflow.utils.helpers import validate_key
        validate_key("extract.fruit-1")
        try:
            validate_key("no spaces")
        except ValueError:
            print(TaskInstanceKey("d", "t", "r").map_index)
    """
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**os.environ, "PYTHONPATH": str(ROOT), "AIRFLOW_HOME": "/srv/af"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.stdout.split() == [
        "1f3870be274f6c49b3e31a0c6728957f",
        "job_reference_id",
        "True",
        "False",
        "m.T",
        "True",
        "False",
        "the_job_took_too_long",
        "True",
        "DuplicateStateError",
        "True",
        "None",
        "-1",
    ], result.stderr
