"""How a run ended, printed the same way by ``dags test``, ``dags trigger --wait`` and
``standalone --run``: its task instances, then its result (each leaf task's return value).
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.text import Text

from cli.render import print_task_instances, task_instance_records
from cli.store import get_run, leaf_task_ids, return_values, task_instances
from state.core import session_scope, structure_of
from state.views import get_dag, items_of_run


def print_outcome(console: Console, url: str, dag_id: str, run_id: str) -> None:
    """The run's task instances, then each leaf task's ``return_value`` (the run's result)."""
    with session_scope(url) as session:
        run = get_run(session, dag_id, run_id)
        dag_model = get_dag(session, dag_id, with_structure=True)
        tasks = structure_of(dag_model).tasks if dag_model else {}
        tis = task_instances(session, run, tasks)
        pairs = ((ti.task_id, ti.map_index) for ti in tis)
        items = items_of_run(session, dag_id, run_id, pairs, tasks)
        records = task_instance_records(tis, items=items)
        results = {tid: return_values(session, run, tid) for tid in leaf_task_ids(tasks)}
        title = f"{dag_id} {run_id}: {run.state}{took(run.start_date, run.end_date)}"
    print_task_instances(console, title, records)
    for task_id, values in results.items():
        if values:
            line = Text(f"{task_id} result: ", style="bold")
            console.print(line.append(result_text(values[0] if len(values) == 1 else values)))


def took(start: Any, end: Any) -> str:
    return f" in {(end - start).total_seconds():.2f}s" if start and end else ""


def result_text(value: Any) -> str:
    """A string as it is (a report reads better unquoted), anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, default=str)
