"""``DAG`` and ``@dag``: a set of tasks and their dependencies, and its serialized structure.

The structure (``DAG.structure()``) is what the scheduler stores and what ``state/`` evaluates
readiness on; its hash tells the scheduler that a DAG changed (verify_integrity).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import inspect
import json
from collections.abc import Callable
from graphlib import CycleError, TopologicalSorter
from typing import Any

from tradewind import dag_context
from tradewind.exceptions import DagDefinitionError
from tradewind.task import Task
from tradewind.timetables import InvalidSchedule, parse_schedule

ScheduleArg = str | dt.timedelta | None


class DAG:
    """A DAG of tasks; use as ``with DAG(dag_id=...):`` or build with ``@dag``."""

    def __init__(
        self,
        dag_id: str,
        *,
        schedule: ScheduleArg = None,
        start_date: dt.datetime | None = None,
        catchup: bool = False,
        max_active_tasks: int = 16,
        max_active_runs: int = 16,
        params: dict[str, Any] | None = None,
        tags: list[str] | None = None,
        description: str | None = None,
        default_args: dict[str, Any] | None = None,
    ) -> None:
        if not dag_id or not isinstance(dag_id, str):
            raise DagDefinitionError(f"dag_id must be a non-empty string, got {dag_id!r}")
        self.dag_id = dag_id
        self.schedule = schedule
        try:
            self._schedule_text = parse_schedule(schedule)
        except InvalidSchedule as error:
            raise DagDefinitionError(f"DAG {dag_id}: {error}") from None
        self.start_date = _aware(start_date)
        self.catchup = catchup
        self.max_active_tasks = max_active_tasks
        self.max_active_runs = max_active_runs
        self.params = dict(params or {})
        self.tags = list(tags or [])
        self.description = description
        self.default_args = dict(default_args or {})
        self.tasks: dict[str, Task] = {}
        self.fileloc: str | None = None
        dag_context.CREATED.append(self)

    def __enter__(self) -> DAG:
        dag_context.push(self)
        return self

    def __exit__(self, *exc: object) -> None:
        dag_context.pop()

    def __repr__(self) -> str:
        return f"<DAG {self.dag_id}: {len(self.tasks)} tasks>"

    def unique_task_id(self, task_id: str) -> str:
        """``t``, then ``t__1``, ``t__2``... when one task is called several times."""
        if task_id not in self.tasks:
            return task_id
        n = 1
        while f"{task_id}__{n}" in self.tasks:
            n += 1
        return f"{task_id}__{n}"

    def add_task(self, task: Task) -> None:
        if task.task_id in self.tasks:
            raise DagDefinitionError(f"DAG {self.dag_id}: duplicate task id {task.task_id!r}")
        task.dag = self
        self.tasks[task.task_id] = task

    def get_task(self, task_id: str) -> Task:
        try:
            return self.tasks[task_id]
        except KeyError:
            raise KeyError(f"DAG {self.dag_id} has no task {task_id!r}") from None

    def topological_order(self) -> list[str]:
        graph = {tid: sorted(task.upstream_task_ids) for tid, task in self.tasks.items()}
        try:
            return list(TopologicalSorter(graph).static_order())
        except CycleError as error:
            cycle = " -> ".join(error.args[1])
            raise DagDefinitionError(f"DAG {self.dag_id} has a cycle: {cycle}") from None

    def validate(self) -> None:
        for task in self.tasks.values():
            unknown = task.upstream_task_ids - self.tasks.keys()
            if unknown:
                raise DagDefinitionError(
                    f"DAG {self.dag_id}: task {task.task_id} depends on unknown task(s) "
                    f"{sorted(unknown)}"
                )
        self.topological_order()

    def structure(self) -> dict[str, Any]:
        """What the scheduler and ``state/`` need, as JSON: no code, only ids and options."""
        return {
            "dag_id": self.dag_id,
            "schedule": self._schedule_text,
            "start_date": self.start_date.isoformat() if self.start_date else None,
            "catchup": self.catchup,
            "max_active_tasks": self.max_active_tasks,
            "max_active_runs": self.max_active_runs,
            "params": self.params,
            "tags": self.tags,
            "tasks": {tid: _task_structure(self.tasks[tid]) for tid in self.topological_order()},
        }

    def version_hash(self) -> str:
        text = json.dumps(self.structure(), sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()


def _aware(value: dt.datetime | None) -> dt.datetime | None:
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value


def _task_structure(task: Task) -> dict[str, Any]:
    options = task.options
    return {
        "upstream": sorted(task.upstream_task_ids),
        "downstream": sorted(task.downstream_task_ids),
        "trigger_rule": str(options.trigger_rule),
        "retries": options.retries,
        "retry_delay_seconds": options.retry_delay.total_seconds() if options.retry_delay else 0,
        "execution_timeout_seconds": (
            options.execution_timeout.total_seconds() if options.execution_timeout else None
        ),
        "queue": options.queue,
        "pool": options.pool,
        "runtime": task.is_runtime,
        "mapping": _mapping_structure(task.mapping),
    }


def _mapping_structure(mapping: dict[str, Any] | None) -> dict[str, Any] | None:
    if mapping is None:
        return None
    return {key: value for key, value in mapping.items() if key != "kwargs"}


def dag(dag_id_or_function: str | Callable[..., Any] | None = None, **dag_kwargs: Any) -> Any:
    """``@dag`` / ``@dag(dag_id=..., schedule=...)``: calling the function builds the DAG.

    The function's parameters with defaults become the DAG's params; tasks see the trigger's
    ``--conf`` merged over them as ``params``.
    """

    def decorate(function: Callable[..., Any]) -> Callable[..., DAG]:
        @functools.wraps(function)
        def build(*args: Any, **kwargs: Any) -> DAG:
            params = {
                name: parameter.default
                for name, parameter in inspect.signature(function).parameters.items()
                if parameter.default is not inspect.Parameter.empty
            }
            options = dict(dag_kwargs)
            params.update(options.pop("params", None) or {})
            dag_id = options.pop("dag_id", None) or function.__name__
            with DAG(dag_id, params=params, **options) as built:
                function(*args, **kwargs)
            built.validate()
            return built

        return build

    if callable(dag_id_or_function):
        return decorate(dag_id_or_function)
    if isinstance(dag_id_or_function, str):
        dag_kwargs["dag_id"] = dag_id_or_function
    return decorate
