"""Finding a task in the worker's own DAG files, parsed once per file version per process.

The Celery pool process parses a file on first use and keeps it, so the forked task process
inherits the parsed DAG and starts without importing anything.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from tradewind.dag import DAG
from tradewind.exceptions import TaskNotFound
from tradewind.loader import load_dag_file, one_line_error
from tradewind.task import Task

_CACHE: dict[str, tuple[float, dict[str, DAG]]] = {}


def preload(fileloc: str) -> None:
    """Load ``fileloc`` now if it is not loaded as it is on disk (a file that fails is skipped:
    the try that asks for it reports the error)."""
    with contextlib.suppress(TaskNotFound):
        _dags_in(fileloc)


def find_task(fileloc: str, dag_id: str, task_id: str) -> tuple[DAG, Task]:
    dags = _dags_in(fileloc)
    if dag_id not in dags:
        raise TaskNotFound(f"DAG {dag_id!r} is not in {fileloc} on this worker")
    dag = dags[dag_id]
    if task_id not in dag.tasks:
        raise TaskNotFound(f"DAG {dag_id!r} has no task {task_id!r} in {fileloc} on this worker")
    return dag, dag.tasks[task_id]


def _dags_in(fileloc: str) -> dict[str, DAG]:
    path = Path(fileloc)
    try:
        mtime = path.stat().st_mtime
    except OSError:
        raise TaskNotFound(f"DAG file {fileloc} does not exist on this worker") from None
    cached = _CACHE.get(fileloc)
    if cached is not None and cached[0] == mtime:
        return cached[1]
    try:
        dags = {dag.dag_id: dag for dag in load_dag_file(path)}
    except (Exception, SystemExit) as error:
        raise TaskNotFound(f"DAG file {fileloc} does not import: {one_line_error(error)}") from None
    _CACHE[fileloc] = (mtime, dags)
    return dags
