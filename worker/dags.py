"""Finding a task in the worker's own DAG files, parsed once per file version per process.

The supervisor parses a file on first use and keeps it; so does the fork server, so that the task
processes it forks inherit the parsed DAG and start without importing anything.

A file is imported in this process only once it imported in a child process
(``tradewind/dag_processor.py``) within ``TRADEWIND_DAG_FILE_PROCESSOR_TIMEOUT``: a file that
exits, crashes, hangs or eats memory there fails the try that asks for it, with one line naming
the cause, and never reaches the Celery worker or the fork server with the other slots' tries.
The check runs outside the lock below, so a file that hangs holds no other slot; in a task
process, a file that changed since its fork is imported there, under the try's
``execution_timeout``.

One file at a time per process: a DAG file's import collects its tasks into module-level
stacks of the authoring API (``tradewind/dag_context.py``), and two supervisor threads importing
at once would put each other's tasks in their DAGs.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

from tradewind.dag import DAG
from tradewind.dag_processor import ProcessorLimits, parse_file
from tradewind.exceptions import TaskNotFound
from tradewind.loader import load_dag_file, one_line_error
from tradewind.settings import get_settings
from tradewind.task import Task

_CACHE: dict[str, tuple[float, dict[str, DAG]]] = {}
#: Per file, the version that last imported in a child.
_CHECKED: dict[str, float] = {}
#: Per file, the version that last failed in a child, its error and when (``time.monotonic``):
#: kept for a while only (the processor's timeout), so that the try's alert does not wait for
#: a hanging file again, and a file that failed for a passing reason (a slow network) recovers.
_FAILED: dict[str, tuple[float, str, float]] = {}
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
    if _CHECKED.get(fileloc) != mtime:
        # Outside the lock: a file that hangs here holds no other slot's try.
        error = _checked(fileloc, path, mtime)
        if error is not None:
            raise TaskNotFound(f"DAG file {fileloc} does not import: {error}")
        _CHECKED[fileloc] = mtime
    with _LOADING:
        cached = _CACHE.get(fileloc)  # loaded by another thread while this one waited
        if cached is not None and cached[0] == mtime:
            return cached[1]
        return _load(path, fileloc, mtime)


def _checked(fileloc: str, path: Path, mtime: float) -> str | None:
    """The file's import error in a child (None: it imports), a recent failure taken as is."""
    failed = _FAILED.get(fileloc)
    kept_seconds = get_settings().dag_file_processor_timeout
    if failed is not None and failed[0] == mtime and time.monotonic() - failed[2] < kept_seconds:
        return failed[1]
    result = parse_file(path, ProcessorLimits.of(get_settings()))
    error = result.error[0] if result.error else None
    if error is not None:
        _FAILED[fileloc] = (mtime, error, time.monotonic())
    return error


def _load(path: Path, fileloc: str, mtime: float) -> dict[str, DAG]:
    try:
        dags = {dag.dag_id: dag for dag in load_dag_file(path)}
    except (Exception, SystemExit) as error:
        raise TaskNotFound(f"DAG file {fileloc} does not import: {one_line_error(error)}") from None
    _CACHE[fileloc] = (mtime, dags)
    return dags
