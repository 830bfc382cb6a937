"""An Airflow 2 DAG as public repositories write them: default_args with email flags,
schedule_interval, days_ago, DummyOperator, PythonOperator with provide_context, templates
with execution_date, XComs pulled by task id. Loaded unchanged by Tradewind's tests."""

from datetime import timedelta

from airflow import DAG
from airflow.operators.bash_operator import BashOperator
from airflow.operators.dummy_operator import DummyOperator
from airflow.operators.python_operator import BranchPythonOperator, PythonOperator
from airflow.utils.dates import days_ago

default_args = {
    "owner": "data-eng",
    "depends_on_past": False,
    "email": ["data-alerts@example.com"],
    "email_on_failure": True,
    "email_on_retry": False,
    "retries": 1,
    "retry_delay": timedelta(seconds=5),
}


def extract_sales(**context):
    day = context["execution_date"].strftime("%Y-%m-%d")
    rows = [{"day": day, "store": store, "amount": 10 * store} for store in range(1, 6)]
    context["ti"].xcom_push(key="rows", value=rows)
    return len(rows)


def choose_path(**context):
    count = context["ti"].xcom_pull(task_ids="extract_sales")
    return "summarize" if count else "no_data"


def summarize(ds, **kwargs):
    rows = kwargs["ti"].xcom_pull(task_ids="extract_sales", key="rows")
    total = sum(row["amount"] for row in rows)
    print(f"sales on {ds}: {total}")
    return total


with DAG(
    "daily_sales_report",
    default_args=default_args,
    description="Daily sales, the Airflow 2 way",
    schedule_interval="@daily",
    start_date=days_ago(2),
    catchup=False,
    max_active_runs=1,
    tags=["sales", "airflow2"],
) as dag:
    start = DummyOperator(task_id="start")
    extract = PythonOperator(
        task_id="extract_sales", python_callable=extract_sales, provide_context=True
    )
    branch = BranchPythonOperator(
        task_id="choose_path", python_callable=choose_path, provide_context=True
    )
    total = PythonOperator(task_id="summarize", python_callable=summarize, provide_context=True)
    no_data = DummyOperator(task_id="no_data")
    report = BashOperator(
        task_id="report",
        bash_command=(
            'echo \'report for {{ execution_date.strftime("%Y-%m-%d") }} '
            "(previous {{ prev_ds }}, next {{ next_ds }}): "
            '{{ ti.xcom_pull(task_ids="summarize") }}\''
        ),
        trigger_rule="none_failed_or_skipped",
    )
    end = DummyOperator(task_id="end", trigger_rule="none_failed")

    start >> extract >> branch >> [total, no_data]
    total >> report >> end
    no_data >> end
