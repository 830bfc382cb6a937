"""Failure callbacks of tries that ended without their task process: zombies, lost messages.

When a supervisor is alive the task process runs its own ``on_failure_callback``. When the
scheduler ends a try instead (its supervisor stopped heartbeating, or its message never
started), nobody else will: the scheduler runs the callback itself, from the DAG it parsed at
sync, after the transaction that failed the try has committed, in a child process that imports
the DAG's file (``failure_callback_in_child``): neither the file nor the callback runs in the
scheduler's own process, so neither can stop it. Like the task process, it calls
the callback for a try that failed for good, not for one that will be retried.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, cast

from tradewind.context import RuntimeTaskInstance, SupervisorClient
from tradewind.dag import DAG
from tradewind.dag_processor import ProcessorLimits, call_in_child
from tradewind.loader import load_dag_file

log = logging.getLogger("tradewind.scheduler")


class TryLost(RuntimeError):
    """The ``exception`` of a callback the scheduler runs: why the try was given up."""


@dataclass(frozen=True)
class LostTry:
    """A try the scheduler failed, as its callback needs it."""

    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    try_number: int
    error: str


class _NoSupervisor:
    """The ``ti`` of a scheduler-run callback has no supervisor to pull XComs through."""

    def __getattr__(self, name: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> NoReturn:
            raise RuntimeError(
                f"{name} is not available in a failure callback run by the scheduler"
            )

        return refuse


def failure_callback_in_child(fileloc: str, lost: LostTry, limits: ProcessorLimits) -> None:
    """Run the try's ``on_failure_callback`` in a child process that imports its DAG file."""
    failure = call_in_child(_import_and_call, (fileloc, lost), limits)
    if failure is not None:
        log.error("failure callback of %s.%s (%s) %s", lost.dag_id, lost.task_id, fileloc, failure)


def _import_and_call(fileloc: str, lost: LostTry) -> None:
    """In the child: import the DAG's file, run the callback."""
    try:
        dags = {dag.dag_id: dag for dag in load_dag_file(Path(fileloc))}
    except (Exception, SystemExit):
        log.exception(
            "failure callback of %s.%s: %s does not import", lost.dag_id, lost.task_id, fileloc
        )
        return
    run_failure_callback(dags, lost)


def run_failure_callback(dags: dict[str, DAG], lost: LostTry) -> bool:
    """Call the task's ``on_failure_callback``; False when it has none (or its DAG is gone)."""
    dag = dags.get(lost.dag_id)
    task = dag.tasks.get(lost.task_id) if dag is not None else None
    callback = task.options.on_failure_callback if task is not None else None
    if callback is None:
        return False
    client = cast(SupervisorClient, _NoSupervisor())
    ti = RuntimeTaskInstance(
        lost.dag_id, lost.run_id, lost.task_id, lost.map_index, lost.try_number, client
    )
    context = {
        "ti": ti,
        "task_instance": ti,
        "dag": dag,
        "task": task,
        "run_id": lost.run_id,
        "dag_run": {"dag_id": lost.dag_id, "run_id": lost.run_id},
        "params": dict(dag.params) if dag is not None else {},
        "exception": TryLost(lost.error),
    }
    try:
        callback(context)
    except Exception:
        # A broken callback is logged; it changes nothing about how the try ended.
        log.exception("failure callback of %s.%s raised", lost.dag_id, lost.task_id)
    return True
