"""Finding a task in the worker's own DAG files, parsed once per file version per process.

The supervisor parses a file on first use and keeps it; so does the fork server, so that the task
processes it forks inherit the parsed DAG and start without importing anything.

One file at a time per process: a DAG file's import collects its tasks into module-level
stacks of the authoring API (``tradewind/dag_context.py``), and two supervisor threads importing
at once would put each other's tasks in their DAGs.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

from tradewind.dag import DAG
from tradewind.exceptions import TaskNotFound
from tradewind.loader import load_dag_file, one_line_error
from tradewind.task import Task

_CACHE: dict[str, tuple[float, dict[str, DAG]]] = {}
_LOADING = threading.Lock()


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
    with _LOADING:
        cached = _CACHE.get(fileloc)  # loaded by another thread while this one waited
        if cached is not None and cached[0] == mtime:
            return cached[1]
        return _load(path, fileloc, mtime)


def _load(path: Path, fileloc: str, mtime: float) -> dict[str, DAG]:
    try:
        dags = {dag.dag_id: dag for dag in load_dag_file(path)}
    except (Exception, SystemExit) as error:
        raise TaskNotFound(f"DAG file {fileloc} does not import: {one_line_error(error)}") from None
    _CACHE[fileloc] = (mtime, dags)
    return dags
