"""The standard provider's sensors poke as Airflow's do; BashOperator takes every argument of
the provider's; the provider's decorators."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from tradewind import DAG, Connection, DagDefinitionError, FailTask, PokeReturnValue, task
from tradewind.bash_operator import BashOperator
from tradewind.sensors import Reschedule
from tradewind.standard import decorators
from tradewind.standard.command_sensors import BashSensor, PythonSensor
from tradewind.standard.file_sensor import FileSensor
from tradewind.standard.time_sensors import (
    DateTimeSensor,
    DayOfWeekSensor,
    TimeDeltaSensor,
    TimeSensor,
    TimeSensorAsync,
)

from .standard_helpers import FakeClient, context_of, running

UTC = dt.UTC


def test_a_time_delta_sensor_waits_from_the_interval_end_or_the_logical_date() -> None:
    with DAG("s"):
        sensor = TimeDeltaSensor(task_id="t", delta=dt.timedelta(minutes=5))
        minutes = TimeDeltaSensor(task_id="m", delta=5)
    now = dt.datetime.now(UTC)

    assert sensor.poke(context_of(sensor, logical_date=now - dt.timedelta(minutes=6)))
    assert not sensor.poke(context_of(sensor, logical_date=now - dt.timedelta(minutes=4)))
    recent = (now - dt.timedelta(hours=1), now - dt.timedelta(minutes=1))
    assert not minutes.poke(context_of(minutes, logical_date=recent[0], interval=recent))


def test_a_time_sensor_waits_for_its_time_of_day() -> None:
    now = dt.datetime.now(UTC)
    with DAG("s"):
        passed = TimeSensor(task_id="p", target_time=(now - dt.timedelta(minutes=1)).time())
        later = TimeSensor(task_id="l", target_time=(now + dt.timedelta(minutes=1)).time())

    if passed.target_datetime.date() == later.target_datetime.date():  # not across midnight
        assert passed.poke(context_of(passed)) and not later.poke(context_of(later))


def test_a_date_time_sensor_takes_a_rendered_iso_string_or_a_datetime() -> None:
    with DAG("s"):
        templated = DateTimeSensor(task_id="t", target_time="{{ logical_date }}")
        future = DateTimeSensor(task_id="f", target_time=dt.datetime(2999, 1, 1))
    context = context_of(templated)
    templated.render_template_fields(context)

    assert templated.moment == dt.datetime(2026, 1, 5, 12, tzinfo=UTC)
    assert templated.poke(context)
    assert not future.poke(context_of(future))


def test_a_day_of_week_sensor_checks_the_logical_dates_day() -> None:
    with DAG("s"):
        monday = DayOfWeekSensor(task_id="m", week_day="Monday", use_task_logical_date=True)
        weekend = DayOfWeekSensor(
            task_id="w", week_day={"Saturday", "Sunday"}, use_task_logical_date=True
        )

    assert monday.poke(context_of(monday)) and not weekend.poke(context_of(weekend))


def test_the_async_sensors_defer_on_a_datetime_trigger() -> None:
    from tradewind.triggers import TaskDeferred
    from tradewind.triggers.temporal import DateTimeTrigger

    later = dt.time(23, 59, 59, 999999, tzinfo=dt.UTC)  # today's last moment
    with DAG("s"):
        sensor = TimeSensorAsync(task_id="t", target_time=later)
    assert sensor.deferrable
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(context_of(sensor))
    trigger = deferred.value.trigger
    assert isinstance(trigger, DateTimeTrigger) and trigger.moment == sensor.target_datetime
    assert deferred.value.method_name == "execute_complete"


def test_a_file_sensor_finds_a_file_under_its_connections_path(tmp_path: Path) -> None:
    (tmp_path / "deep" / "er").mkdir(parents=True)
    client = FakeClient({"fs_data": Connection("fs_data", "fs", extra={"path": str(tmp_path)})})
    with DAG("s"):
        plain = FileSensor(task_id="p", filepath="data.csv", fs_conn_id="fs_data")
        folder = FileSensor(task_id="f", filepath="deep", fs_conn_id="fs_data")
        deep = FileSensor(task_id="d", filepath="**/*.csv", fs_conn_id="fs_data", recursive=True)

    with running(context_of(plain, client=client)) as context:
        assert not plain.poke(context) and not folder.poke(context) and not deep.poke(context)
        (tmp_path / "data.csv").write_text("x")
        (tmp_path / "deep" / "er" / "more.csv").write_text("y")
        assert plain.poke(context) and folder.poke(context) and deep.poke(context)


def test_a_bash_sensor_is_done_on_exit_0_and_fails_on_a_code_other_than_retry_exit_code() -> None:
    with DAG("s"):
        done = BashSensor(task_id="d", bash_command="test -d .", env={"X": "1"})
        again = BashSensor(task_id="a", bash_command="exit 3")
        retry = BashSensor(task_id="r", bash_command="exit 3", retry_exit_code=3)
        broken = BashSensor(task_id="b", bash_command="exit 4", retry_exit_code=3)

    assert done.poke(context_of(done))
    assert not again.poke(context_of(again)) and not retry.poke(context_of(retry))
    with pytest.raises(FailTask, match="the sensor's command exited 4"):
        broken.poke(context_of(broken))


def test_a_python_sensor_calls_like_python_operator_and_keeps_a_poke_return_value() -> None:
    def ready(limit: int, ds: Any = None, templates_dict: Any = None) -> Any:
        return PokeReturnValue(limit > 1, {"ds": ds, "t": templates_dict})

    with DAG("s"):
        sensor = PythonSensor(
            task_id="p", python_callable=ready, op_kwargs={"limit": 2}, templates_dict={"a": 1}
        )
        plain = PythonSensor(task_id="q", python_callable=lambda: 1)

    assert sensor.poke(context_of(sensor)) == PokeReturnValue(
        True, {"ds": "2026-01-05", "t": {"a": 1}}
    )
    assert plain.poke(context_of(plain)) == PokeReturnValue(True)


def test_a_rescheduled_sensor_ends_its_try_until_done() -> None:
    with DAG("s"):
        sensor = PythonSensor(
            task_id="p", python_callable=lambda: False, mode="reschedule", poke_interval=5
        )

    with pytest.raises(Reschedule):
        sensor.execute(context_of(sensor))


def test_a_bash_operator_takes_every_argument_of_the_providers(tmp_path: Path) -> None:
    with DAG("b"):
        op = BashOperator(
            task_id="b",
            bash_command='printf \'caf\\xe9 %s %s %s\' "$ONLY" "${HOME:-none}" $AIRFLOW_CTX_DAG_ID',
            env={"ONLY": "mine"},
            output_encoding="latin-1",
            output_processor=lambda line: line.split(),
            skip_on_exit_code=None,
        )
        where = BashOperator(task_id="w", bash_command="pwd", cwd=str(tmp_path))
        temporary = BashOperator(task_id="t", bash_command="pwd")

    assert op.execute(context_of(op)) == ["café", "mine", "none", "b"]
    assert where.execute(context_of(where)) == str(tmp_path)
    assert "/tradewind" in temporary.execute(context_of(temporary))


def test_a_bash_operator_refuses_an_output_processor_that_is_not_callable() -> None:
    with DAG("b"), pytest.raises(DagDefinitionError, match="output_processor must be callable"):
        BashOperator(task_id="b", bash_command="true", output_processor="upper")


def test_the_providers_decorators_are_tradewinds_and_the_new_ones_registered() -> None:
    assert decorators.python_task(lambda: 1).options == task(lambda: 1).options
    assert task.external_python is decorators.external_python_task  # type: ignore[attr-defined]
    assert task.branch_virtualenv is decorators.branch_virtualenv_task  # type: ignore[attr-defined]

    @task.branch_virtualenv(requirements=[])  # type: ignore[attr-defined]
    def choose() -> str:
        return "a"

    @task.branch_external_python(python="/usr/bin/python3")  # type: ignore[attr-defined]
    def choose_outside() -> str:
        return "a"

    with DAG("d") as built:
        choose()
        choose_outside()

    assert built.structure()["tasks"]["choose"]["kind"] == "branch"
    assert built.structure()["tasks"]["choose_outside"]["kind"] == "branch"
    with pytest.raises(DagDefinitionError, match=r"@task\.external_python: python must be"):
        task.external_python()(lambda: 1)  # type: ignore[attr-defined]


def test_task_virtualenv_takes_the_providers_arguments() -> None:
    @task.virtualenv(  # type: ignore[attr-defined]
        requirements=[],
        venv_cache_path="/tmp/venvs",
        index_urls="https://one.example/simple",
        skip_on_exit_code=[99, 100],
        env_vars={"A": "1"},
        inherit_env=False,
        expect_airflow=False,
    )
    def isolated() -> int:
        return 1

    with DAG("v") as built:
        isolated()

    assert built.get_task("isolated") is not None
    with pytest.raises(DagDefinitionError, match="skip_on_exit_code must be exit codes"):
        task.virtualenv(skip_on_exit_code=["x"])  # type: ignore[attr-defined]
