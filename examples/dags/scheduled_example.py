"""A scheduled DAG: a run every hour, from its start date, without catching up.

``schedule="@hourly"`` with ``catchup=False``: the scheduler creates one run per hour from now on,
each with its data interval (``data_interval_start`` / ``data_interval_end`` in the context and
in templates). While ``tradewind standalone`` serves, a run appears at the top of each hour; pause
it on the DAGs page (its toggle) or with ``tradewind dags pause scheduled_example``. To have a
schedule start paused, as Airflow's default does, give the DAG ``is_paused_upon_creation=True``.

Run it once by hand with ``tradewind standalone --run scheduled_example``.
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import dag, get_current_context, task


@task
def summarize_hour() -> str:
    context = get_current_context()
    start, end = context["data_interval_start"], context["data_interval_end"]
    if start is None:  # a run triggered by hand
        return f"summarized the hour before {context['logical_date']:%H:%M}"
    return f"summarized {start:%H:%M} to {end:%H:%M}"


@dag(
    dag_id="scheduled_example",
    schedule="@hourly",
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    tags=["example"],
)
def scheduled_example():
    summarize_hour()


scheduled_example()
