"""Airflow 2 data-aware DAGs as public repositories write them: Dataset outlets and a
Dataset schedule, Variable.get with default_var, the Airflow 2 template keys and module paths.
Loaded unchanged by Tradewind's tests."""

import json
from datetime import datetime

from airflow import DAG
from airflow.datasets import Dataset
from airflow.models import Variable
from airflow.operators.bash import BashOperator
from airflow.operators.python import PythonOperator

INVENTORY = Dataset("s3://warehouse/inventory.json")


def snapshot(execution_date, **_):
    limit = int(Variable.get("inventory_limit", default_var="3"))
    items = {f"sku-{n}": n for n in range(limit)}
    print(json.dumps({"at": execution_date.isoformat(), "items": items}))
    return items


with DAG(
    dag_id="inventory_snapshot",
    start_date=datetime(2024, 1, 1),
    schedule_interval=None,
    catchup=False,
    tags=["inventory", "airflow2"],
) as producer:
    PythonOperator(
        task_id="snapshot", python_callable=snapshot, outlets=[INVENTORY], provide_context=True
    )


with DAG(
    dag_id="inventory_consumer",
    start_date=datetime(2024, 1, 1),
    schedule=[INVENTORY],
    catchup=False,
    tags=["inventory", "airflow2"],
) as consumer:
    BashOperator(
        task_id="announce",
        bash_command=(
            "echo 'inventory of {{ ds_nodash }} (yesterday {{ yesterday_ds }}, "
            "tomorrow {{ tomorrow_ds }})'"
        ),
    )
