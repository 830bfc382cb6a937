"""The task kinds' arguments at import (one line each for a bad one) and the parts of
``@task.virtualenv`` that need no task process: the source it sends, its venv made once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tradewind import DAG, BaseSensorOperator, PokeReturnValue, task
from tradewind.exceptions import DagDefinitionError
from tradewind.sensors import sensor_options
from tradewind.virtualenv import VenvSpec, function_source, needs_fresh_process

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: task.sensor(mode="wait"), "mode must be 'poke' or 'reschedule', got 'wait'"),
        (lambda: task.sensor(poke_interval=0), "poke_interval must be > 0, got 0"),
        (lambda: task.sensor(timeout="soon"), "timeout must be a timedelta or seconds"),
        (lambda: task.bash(skip_on_exit_code="99"), "skip_on_exit_code must be exit codes"),
        (lambda: task.virtualenv(requirements=5), "requirements must be a list of strings"),
        (lambda: task.virtualenv(serializer="yaml"), "serializer must be one of"),
        (lambda: task.bash(email_on_failure=1), "email_on_failure must be True or False"),
    ],
)
def test_a_bad_argument_of_a_task_kind_fails_the_import_in_one_line(make, message) -> None:
    with pytest.raises(DagDefinitionError, match=message) as raised:
        make()
    assert "\n" not in str(raised.value)


def test_a_poke_return_value_is_true_when_done() -> None:
    assert PokeReturnValue(True) and not PokeReturnValue(False, xcom_value=1)


def test_sensor_backoff_doubles_the_wait_up_to_max_wait() -> None:
    options = sensor_options(2, 60, "poke", False, True, 10)
    assert [options.delay(n) for n in (1, 2, 3, 4)] == [2, 4, 8, 10]
    assert sensor_options(2, 60, "poke", False, False, None).delay(5) == 2


class FileSensor(BaseSensorOperator):
    template_fields = ("path",)

    def __init__(self, *, path: str, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.path = path

    def poke(self, context: dict[str, object]) -> bool:
        return Path(self.path).exists()


def test_a_classic_sensor_is_an_operator_with_the_sensor_options_in_airflow_units() -> None:
    with DAG("classic_sensor"):
        sensor = FileSensor(
            task_id="wait", path="/tmp/x", poke_interval=2, timeout=30, mode="reschedule",
            soft_fail=True, exponential_backoff=True, retries=1, pool="p",
        )  # fmt: skip

    assert (sensor.poke_interval, sensor.timeout, sensor.mode) == (2.0, 30.0, "reschedule")
    assert sensor.soft_fail and sensor.exponential_backoff
    assert (sensor.task.options.retries, sensor.task.options.pool) == (1, "p")


class NoPoke(BaseSensorOperator):
    pass


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: NoPoke(task_id="n"), "NoPoke must define poke"),
        (lambda: FileSensor(task_id="f", path="p", mode="wait"), "FileSensor f: mode must be"),
        (lambda: FileSensor(task_id="f", path="p", poke_interval=-1), "poke_interval must be"),
        (lambda: FileSensor(task_id="f", path="p", email=5), "email must be an address or a list"),
    ],
)
def test_a_bad_classic_sensor_fails_the_import_in_one_line(make, message) -> None:
    with DAG("bad_sensor"), pytest.raises(DagDefinitionError, match=message) as raised:
        make()
    assert "\n" not in str(raised.value)


@task.virtualenv(requirements=[], system_site_packages=False)
def decorated(x: int) -> int:
    import math

    return math.isqrt(x)


def test_a_virtualenv_function_is_sent_without_its_decorator_and_in_a_fresh_process() -> None:
    source = function_source(decorated.function.__wrapped__)  # type: ignore[union-attr]
    assert source.startswith("def decorated(x: int) -> int:\n")
    assert "@task" not in source
    assert needs_fresh_process(type("T", (), {"python_callable": decorated.function})())


def test_a_venv_is_keyed_by_its_requirements_python_and_site_packages() -> None:
    key = VenvSpec(("b", "a"), None, False).key
    assert key == VenvSpec(("a", "b"), None, False).key
    assert key != VenvSpec(("a",), None, False).key != VenvSpec(("a", "b"), None, True).key


ENSURE = """
import sys
from pathlib import Path
from tradewind.virtualenv import VenvSpec, ensure_venv
print(ensure_venv(Path(sys.argv[1]), VenvSpec((), None, False)))
"""


def test_two_workers_needing_one_venv_make_it_once(tmp_path: Path) -> None:
    folder = tmp_path / "venvs"
    command = [sys.executable, "-c", ENSURE, str(folder)]
    both = [
        subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True) for _ in range(2)
    ]
    outputs = [process.communicate(timeout=180)[0] for process in both]

    assert all(process.returncode == 0 for process in both)
    assert sum(output.count("making virtualenv") for output in outputs) == 1
    pythons = {output.strip().splitlines()[-1] for output in outputs}
    assert len(pythons) == 1 and Path(pythons.pop()).is_file()
