"""The standard provider's sensors (their deferrable forms left out: no triggerer yet)."""

from __future__ import annotations

import datetime

import pendulum

from tradewind import DAG, TriggerRule
from tradewind.bash_operator import BashOperator
from tradewind.standard.command_sensors import BashSensor, PythonSensor
from tradewind.standard.file_sensor import FileSensor
from tradewind.standard.time_sensors import DayOfWeekSensor, TimeDeltaSensor, TimeSensor
from tradewind.standard.weekday import WeekDay


def success_callable():
    return True


def failure_callable():
    return False


# An hour from now, but today: after 23:00 UTC an hour later is tomorrow, a time already past.
_NOW = datetime.datetime.now(datetime.UTC)
LATER_TODAY = min(
    _NOW + datetime.timedelta(hours=1), _NOW.replace(hour=23, minute=59, second=59)
).time()
NOT_TODAY = WeekDay(datetime.datetime.now(datetime.UTC).isoweekday() % 7 + 1)

with DAG(
    dag_id="example_sensors",
    schedule=None,
    start_date=pendulum.datetime(2021, 1, 1, tz="UTC"),
    catchup=False,
    tags=["example"],
) as dag:
    t0 = TimeDeltaSensor(
        task_id="wait_some_seconds", delta=datetime.timedelta(seconds=2), poke_interval=0.5
    )

    t1 = TimeSensor(
        task_id="fire_immediately", target_time=datetime.datetime.now(tz=datetime.UTC).time()
    )

    t2 = TimeSensor(
        task_id="timeout_after_second_date_in_the_future",
        timeout=1,
        poke_interval=0.5,
        soft_fail=True,
        target_time=LATER_TODAY,
    )

    t3 = BashSensor(task_id="Sensor_succeeds", bash_command="exit 0")

    t4 = BashSensor(
        task_id="Sensor_fails_after_3_seconds",
        timeout=3,
        poke_interval=1,
        mode="reschedule",
        soft_fail=True,
        bash_command="exit 1",
    )

    t5 = BashOperator(task_id="remove_file", bash_command="rm -rf /tmp/tradewind_file_for_testing")

    t6 = FileSensor(
        task_id="wait_for_file",
        filepath="tradewind_file_for_testing",
        poke_interval=1,
        mode="reschedule",
    )

    t8 = BashOperator(
        task_id="create_file_after_3_seconds",
        bash_command="sleep 3; touch /tmp/tradewind_file_for_testing",
    )

    t9 = PythonSensor(task_id="success_sensor_python", python_callable=success_callable)

    t10 = PythonSensor(
        task_id="failure_timeout_sensor_python",
        timeout=3,
        poke_interval=1,
        soft_fail=True,
        python_callable=failure_callable,
    )

    t11 = DayOfWeekSensor(
        task_id="week_day_sensor_failing_on_timeout",
        timeout=3,
        poke_interval=1,
        soft_fail=True,
        week_day=NOT_TODAY,
    )

    tx = BashOperator(task_id="print_date_in_bash", bash_command="date")

    tx.trigger_rule = TriggerRule.NONE_FAILED
    [t0, t1, t2, t3, t4] >> tx
    t5 >> t6 >> tx
    t8 >> tx
    [t9, t10] >> tx
    t11 >> tx
