"""The context's keys end to end, under ``tradewind dags test`` (the worker's own ``execute``,
a real task process): macros, Airflow 2's date keys, ``prev_start_date_success`` read from the
store, ``dag_run.run_type``, ``expanded_ti_count``, and ``map_index_template`` shown by
``runs show``."""

from __future__ import annotations

import json
import textwrap

from .conftest import CliEnv, run_tradewind

CONTEXT_DAG = """
import datetime as dt
from tradewind import DAG, get_current_context, task
from tradewind.bash_operator import BashOperator

with DAG("context_keys", start_date=dt.datetime(2024, 1, 1)):
    BashOperator(
        task_id="bash",
        bash_command=(
            "echo week={{ macros.ds_add(ds, 7) == macros.ds_add(macros.ds_add(ds, 3), 4) }} "
            "old={{ execution_date == logical_date }} next={{ next_ds == ds }} "
            "tomorrow={{ tomorrow_ds == macros.ds_add(ds, 1) }} prev={{ prev_start_date_success }}"
        ),
    )

    @task
    def show(execution_date=None, dag_run=None, prev_start_date_success=None, **context):
        print("run_type", dag_run.run_type, "same", execution_date == context["logical_date"])
        print("prev_success", prev_start_date_success)
        print("events", len(context["triggering_asset_events"]), context["expanded_ti_count"])

    @task(map_index_template="{{ name }}")
    def each(x):
        context = get_current_context()
        context["name"] = f"item-{x}"
        print("count", context["expanded_ti_count"])

    show()
    each.expand(x=[1, 2, 3])
"""


def test_the_context_keys_reach_a_real_task(env: CliEnv) -> None:
    (env.dags / "context_keys.py").write_text(textwrap.dedent(CONTEXT_DAG))

    first = run_tradewind(env, "dags", "test", "context_keys", "--run-id", "r1")
    second = run_tradewind(env, "dags", "test", "context_keys", "--run-id", "r2")

    one, two = first.stdout + first.stderr, second.stdout + second.stderr
    assert "context_keys r1: success" in one and "context_keys r2: success" in two
    assert "week=True old=True next=True tomorrow=True prev=None" in one
    assert "run_type test same True" in one
    assert "prev_success None" in one and "events 0 None" in one
    assert "count 3" in one
    shown = run_tradewind(env, "runs", "show", "context_keys", "r1", "--json")
    document = json.loads(shown.stdout)
    started = document["start_date"]
    assert f"prev_success {started.replace('T', ' ')}" in two
    mapped = [r for r in document["task_instances"] if r["task_id"] == "each"]
    assert [(r["map_index"], r["rendered_map_index"]) for r in mapped] == [
        (0, "item-1"),
        (1, "item-2"),
        (2, "item-3"),
    ]
    table = run_tradewind(env, "runs", "show", "context_keys", "r1").stdout
    assert "2 item-3" in table
