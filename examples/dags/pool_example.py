"""Pools: a named number of slots shared by every DAG, so a scarce resource is not overrun.

Each ``query_warehouse`` task instance takes 48 of ``default_pool``'s 128 slots
(``pool_slots=48``): whatever the workers could run, at most two of the five run at once; the
others wait ``scheduled``, and their page says which pool holds them. Make a pool of your own with
``tradewind pools set warehouse 4 --description "..."`` (or on the Pools page) and name it with
``pool="warehouse"``.

Run it with ``tradewind standalone --run pool_example``.
"""

from __future__ import annotations

import time

from airflow.sdk import dag, task


@task(pool="default_pool", pool_slots=48)
def query_warehouse(table: str) -> str:
    time.sleep(1)  # a heavy query
    return table


@task
def done(tables: list[str]) -> str:
    return f"{len(tables)} tables refreshed, two at a time"


@dag(dag_id="pool_example", tags=["example"])
def pool_example():
    done(query_warehouse.expand(table=["orders", "customers", "items", "stores", "returns"]))


pool_example()
