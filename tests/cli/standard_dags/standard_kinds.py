"""What the provider's examples do not exercise: task arguments real DAGs set, the date and
day branches, the short circuit, the provider's decorators, BashOperator's arguments."""

from __future__ import annotations

import datetime
import sys

from tradewind import DAG
from tradewind.bash_operator import BashOperator
from tradewind.standard.datetime_branch import BranchDateTimeOperator, BranchDayOfWeekOperator
from tradewind.standard.decorators import branch_external_python_task, external_python_task
from tradewind.standard.empty import EmptyOperator
from tradewind.standard.python import PythonOperator, ShortCircuitOperator
from tradewind.standard.time_sensors import DateTimeSensor

TODAY = datetime.datetime.now(datetime.UTC).strftime("%A")


def announce(context):
    print(f"on_execute_callback ran for {context['ti'].task_id}")


def big_result(colour, ti=None):
    return {"colour": colour, "task": ti.task_id}


def twice(x):
    return x * 2


def total(values):
    print("mapped total:", sum(values))


def read_back(ti=None):
    print("kept:", ti.xcom_pull(task_ids="kept"), "not kept:", ti.xcom_pull(task_ids="not_kept"))


with DAG(
    "standard_kinds",
    owner_links={"data": "https://example.com/data-team"},
    default_args={"on_execute_callback": announce},
):
    kept = PythonOperator(
        task_id="kept",
        python_callable=big_result,
        op_args=["{{ params.get('c', 'red') }}"],
        doc_json='{"purpose": "kept"}',
    )
    not_kept = PythonOperator(
        task_id="not_kept",
        python_callable=big_result,
        op_kwargs={"colour": "blue"},
        do_xcom_push=False,
        show_return_value_in_logs=False,
        doc_rst="Not *kept*",
    )
    [kept, not_kept] >> PythonOperator(task_id="read_back", python_callable=read_back)

    mapped = PythonOperator.partial(task_id="mapped_py", python_callable=twice).expand(
        op_args=[[1], [2], [3]]
    )
    PythonOperator(task_id="total", python_callable=total, op_args=[mapped.output])

    in_window = BranchDateTimeOperator(
        task_id="in_window",
        target_lower=datetime.time(0, 0),
        target_upper=datetime.time(23, 59, 59),
        follow_task_ids_if_true="inside",
        follow_task_ids_if_false="outside",
    )
    in_window >> [EmptyOperator(task_id="inside"), EmptyOperator(task_id="outside")]

    today = BranchDayOfWeekOperator(
        task_id="today",
        week_day={TODAY},
        follow_task_ids_if_true="is_today",
        follow_task_ids_if_false="other_day",
    )
    today >> [EmptyOperator(task_id="is_today"), EmptyOperator(task_id="other_day")]

    stop = ShortCircuitOperator(
        task_id="stop", python_callable=lambda: False, ignore_downstream_trigger_rules=False
    )
    after_stop = EmptyOperator(task_id="after_stop")
    stop >> after_stop >> EmptyOperator(task_id="after_all", trigger_rule="all_done")

    BashOperator(
        task_id="bash_args",
        bash_command='echo "$GREETING from $AIRFLOW_CTX_TASK_ID in $(basename $(pwd) | cut -c1-9)"',
        env={"GREETING": "{{ 'hello' }}"},
        append_env=True,
        output_processor=lambda line: line.upper(),
    )

    DateTimeSensor(task_id="past_moment", target_time="{{ logical_date }}", poke_interval=0.2)

    @external_python_task(python=sys.executable)
    def doubled(x):
        import sys

        return {"doubled": x * 2, "prefix": sys.prefix}

    @branch_external_python_task(python=sys.executable)
    def pick():
        return "picked"

    doubled(21)
    pick() >> [EmptyOperator(task_id="picked"), EmptyOperator(task_id="not_picked")]
