"""DAGs for the asset and backfill routes: a consumer scheduled on an asset, a daily producer."""

from __future__ import annotations

import datetime as dt

from tradewind import DAG, Asset, task

report = Asset(uri="s3://reports/daily", name="daily_report")

with DAG("daily_report", schedule="@daily", start_date=dt.datetime(2024, 1, 1)):
    task(lambda: "written", task_id="write", outlets=[report])()

with DAG("read_report", schedule=[report]):
    task(lambda: "read", task_id="read")()
