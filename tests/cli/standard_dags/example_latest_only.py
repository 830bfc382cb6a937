"""### LatestOnlyOperator

The tasks after it run only in the most recent scheduled run (and in any run by hand)."""

from __future__ import annotations

import datetime

from tradewind import DAG
from tradewind.standard.empty import EmptyOperator
from tradewind.standard.latest_only import LatestOnlyOperator

with DAG(
    dag_id="latest_only",
    schedule=datetime.timedelta(hours=4),
    start_date=datetime.datetime(2021, 1, 1),
    catchup=False,
    tags=["example", "example2", "example3"],
    doc_md=__doc__,
) as dag:
    latest_only = LatestOnlyOperator(task_id="latest_only")
    task1 = EmptyOperator(task_id="task1")

    latest_only >> task1
