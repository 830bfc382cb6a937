"""Branching: a task picks which way the run goes; the other way is skipped.

``choose`` is a ``@task.branch``: it returns the task id to follow, here from the run's ``mode``
param. The branch not taken ends ``skipped``, and ``report`` (trigger rule
``none_failed_min_one_success``) runs after whichever branch ran.

Run it with ``tradewind standalone --run branch_example``, or
``tradewind dags trigger branch_example --conf '{"mode": "full"}' --wait``.
"""

from __future__ import annotations

from airflow.sdk import dag, get_current_context, task


@task.branch
def choose() -> str:
    mode = get_current_context()["params"]["mode"]
    return "full_reload" if mode == "full" else "incremental_load"


@task
def full_reload() -> str:
    return "reloaded every table"


@task
def incremental_load() -> str:
    return "loaded yesterday's rows"


@task(trigger_rule="none_failed_min_one_success")
def report() -> str:
    return "warehouse up to date"


@dag(dag_id="branch_example", tags=["example"], params={"mode": "incremental"})
def branch_example():
    choose() >> [full_reload(), incremental_load()] >> report()


branch_example()
