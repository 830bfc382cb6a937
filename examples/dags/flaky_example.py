"""A task that keeps failing: retries, then the run fails, and a cleanup runs anyway.

``call_partner_api`` fails every try (the partner is "down"); with ``retries=2`` it is tried three
times, a second apart, and then fails for good. ``publish`` depends on it and ends
``upstream_failed``; ``cleanup`` has ``trigger_rule="all_done"`` and runs whatever happened. The
run ends ``failed``: open it in the UI to see the three tries of ``call_partner_api`` and their
logs, then fix the "partner" (the ``partner_up`` param) and clear the failed task with its
downstream to recover.

Run it with ``tradewind standalone --run flaky_example`` (exit code 1: the run failed), or
``tradewind dags trigger flaky_example --conf '{"partner_up": true}' --wait`` to see it pass.
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import dag, get_current_context, task


@task(retries=2, retry_delay=dt.timedelta(seconds=1))
def call_partner_api() -> dict:
    context = get_current_context()
    if not context["params"]["partner_up"]:
        try_number = context["ti"].try_number
        raise ConnectionError(f"partner API unreachable (try {try_number} of 3)")
    return {"orders": 12}


@task
def publish(answer: dict) -> str:
    return f"{answer['orders']} orders published"


@task(trigger_rule="all_done")
def cleanup() -> None:
    print("temporary files removed")


@dag(dag_id="flaky_example", tags=["example"], params={"partner_up": False})
def flaky_example():
    answer = call_partner_api()
    publish(answer)
    answer >> cleanup()


flaky_example()
