"""A sensor: wait for something outside without holding a worker slot, then use it.

``wait_for_export`` is a ``@task.sensor`` in ``mode="reschedule"``: each poke is a short try that
gives its worker slot back and comes again after ``poke_interval`` (its state meanwhile is
``up_for_reschedule``), until the poke says done or ``timeout`` passes (then it fails). Here the
"export" is ready six seconds after the run's logical date (when it was triggered), so it takes
a few pokes; its ``PokeReturnValue`` carries the export's name to ``load_export`` as an XCom.

Run it with ``tradewind standalone --run sensor_example``; the task's page shows each poke.
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import PokeReturnValue, dag, get_current_context, task

READY_AFTER = dt.timedelta(seconds=6)


@task.sensor(poke_interval=2, timeout=300, mode="reschedule")
def wait_for_export() -> PokeReturnValue:
    triggered = get_current_context()["logical_date"]
    ready = triggered is None or dt.datetime.now(dt.UTC) - triggered >= READY_AFTER
    print("export ready" if ready else "export not there yet")
    return PokeReturnValue(is_done=ready, xcom_value="exports/orders.parquet")


@task
def load_export(name: str) -> str:
    return f"loaded {name}"


@dag(dag_id="sensor_example", tags=["example"])
def sensor_example():
    load_export(wait_for_export())


sensor_example()
