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
from tradewind.airflow2_arguments import take_airflow2_arguments
from tradewind.arguments import refuse_unsupported, take_default_only
from tradewind.assets import InvalidAsset, condition_of, outlets_structure, watchers_of
from tradewind.exceptions import DagDefinitionError
from tradewind.ids import InvalidId, check_key
from tradewind.params import params_structure
from tradewind.partition_specs import partition_mappers_of
from tradewind.partitions import CronPartitionTimetable, time_schedule_of
from tradewind.priority import slot_structure, total_weights
from tradewind.run_options import RunOptions, check_fail_fast_rule, task_run_structure
from tradewind.setup_teardown import control_flow_structure
from tradewind.standard.options import check_owner_links, task_doc_md
from tradewind.task import Task, check_default_args
from tradewind.timetable_base import InvalidTimetable
from tradewind.timetable_store import split_schedule, timetable_structure
from tradewind.timetables import InvalidSchedule, parse_schedule, timezone_structure

ScheduleArg = str | dt.timedelta | Any | None


class DAG:
    """A DAG of tasks; use as ``with DAG(dag_id=...):`` or build with ``@dag``."""

    def __init__(
        self,
        dag_id: str,
        *,
        description: str | None = None,
        schedule: ScheduleArg = None,
        start_date: dt.datetime | None = None,
        catchup: bool = False,
        max_active_tasks: int | None = None,
        max_active_runs: int = 16,
        params: dict[str, Any] | None = None,
        tags: list[str] | None = None,
        default_args: dict[str, Any] | None = None,
        doc_md: str | None = None,
        dag_display_name: str | None = None,
        render_template_as_native_obj: bool = False,
        template_searchpath: str | list[str] | None = None,
        user_defined_macros: dict[str, Any] | None = None,
        user_defined_filters: dict[str, Any] | None = None,
        owner_links: dict[str, str] | None = None,
        template_undefined: type | None = None,
        **other: Any,
    ) -> None:
        try:
            check_key("dag_id", dag_id)
        except InvalidId as error:
            raise DagDefinitionError(str(error)) from None
        renamed: dict[str, Any] = {"schedule": schedule, "max_active_tasks": max_active_tasks}
        take_airflow2_arguments(dag_id, renamed, other)
        schedule, max_active_tasks = renamed["schedule"], renamed["max_active_tasks"]
        self.run_options = RunOptions.of(dag_id, other)
        take_default_only(f"DAG {dag_id}", other)
        refuse_unsupported(f"DAG {dag_id}", other)
        self.dag_id = dag_id
        self.schedule = schedule
        try:
            # A timetable object (or "@continuous") is stored apart from the plain schedule.
            self.timetable, plain = split_schedule(schedule, max_active_runs)
            self._timetable = timetable_structure(self.timetable) if self.timetable else None
            plain = time_schedule_of(plain)  # a partition timetable, as a plain schedule
            self._partition_mappers = partition_mappers_of(schedule)
            self.asset_condition = condition_of(plain)
            self._asset_watchers = watchers_of(plain)
            self._schedule_text = None if self.asset_condition else parse_schedule(plain)
        except (InvalidSchedule, InvalidAsset, InvalidTimetable) as error:
            raise DagDefinitionError(f"DAG {dag_id}: {error}") from None
        self.start_date = _aware(start_date)
        self.catchup = catchup
        self.max_active_tasks = 16 if max_active_tasks is None else max_active_tasks
        self.max_active_runs = max_active_runs
        self.params = dict(params or {})
        self._param_values, self._param_specs = params_structure(self.params, dag_id)
        self.tags = list(tags or [])
        self.description = description
        self.doc_md = doc_md
        self.dag_display_name = dag_display_name
        self.default_args = check_default_args(f"DAG {dag_id}", default_args)
        self.render_template_as_native_obj = render_template_as_native_obj
        self.template_searchpath = _as_list(template_searchpath)
        self.user_defined_macros = dict(user_defined_macros or {})
        self.user_defined_filters = dict(user_defined_filters or {})
        # Jinja's class for a name a template uses and the context lacks: as in Airflow, an
        # error (``jinja2.StrictUndefined``) unless the DAG says otherwise.
        self.template_undefined = template_undefined
        self.owner_links = check_owner_links(dag_id, owner_links)
        self.tasks: dict[str, Task] = {}
        self.task_groups: dict[str, Any] = {}
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
        return _unique(task_id, self._taken)

    def _taken(self, node_id: str) -> bool:
        return node_id in self.tasks or node_id in self.task_groups

    def add_group(self, group: Any, group_id: str, add_suffix: bool) -> str:
        """Register a task group; its id, made unique with ``__1``... when ``add_suffix``."""
        if add_suffix:
            group_id = _unique(group_id, self._taken)
        elif self._taken(group_id):
            raise DagDefinitionError(f"DAG {self.dag_id}: duplicate task group id {group_id!r}")
        self.task_groups[group_id] = group
        return group_id

    def add_task(self, task: Task) -> None:
        try:
            check_key("task_id", task.task_id)
        except InvalidId as error:
            raise DagDefinitionError(f"DAG {self.dag_id}: {error}") from None
        if self._taken(task.task_id):
            raise DagDefinitionError(f"DAG {self.dag_id}: duplicate task id {task.task_id!r}")
        if self.run_options.fail_fast:
            check_fail_fast_rule(self.dag_id, task.task_id, str(task.options.trigger_rule))
        task.options = self.run_options.bound(task.options)
        task.dag = self
        self.tasks[task.task_id] = task
        if task.task_group is not None:
            task.task_group.task_ids.append(task.task_id)
            task.task_group.tasks.append(task)

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
            groups = sorted({g for tid in error.args[1] if (g := self.tasks[tid].group_id)})
            through = f" (through task group {', '.join(groups)})" if groups else ""
            raise DagDefinitionError(f"DAG {self.dag_id} has a cycle{through}: {cycle}") from None

    def validate(self) -> list[str]:
        """Check every upstream is a task and there is no cycle; the tasks in topological order."""
        for task in self.tasks.values():
            unknown = task.upstream_task_ids - self.tasks.keys()
            if unknown:
                raise DagDefinitionError(
                    f"DAG {self.dag_id}: task {task.task_id} depends on unknown task(s) "
                    f"{sorted(unknown)}"
                )
        return self.topological_order()

    def structure(self, order: list[str] | None = None) -> dict[str, Any]:
        """What the scheduler and ``state/`` need, as JSON: no code, only ids and options.
        ``order``: the tasks' topological order, when ``validate`` has just computed it."""
        order = self.topological_order() if order is None else order
        weights = total_weights(self.tasks, order)
        return {
            "dag_id": self.dag_id,
            "schedule": self._schedule_text,
            "asset_condition": self.asset_condition,
            # Only when there are some: a DAG without watchers keeps its version hash.
            **({"asset_watchers": self._asset_watchers} if self._asset_watchers else {}),
            "start_date": self.start_date.isoformat() if self.start_date else None,
            "catchup": self.catchup,
            "max_active_tasks": self.max_active_tasks,
            "max_active_runs": self.max_active_runs,
            "params": self._param_values,
            "param_specs": self._param_specs,
            "tags": self.tags,
            "description": self.description,
            "doc_md": self.doc_md,
            "display_name": self.dag_display_name,
            "tasks": {tid: _task_structure(self.tasks[tid], weights[tid]) for tid in order},
            "groups": {gid: group.structure() for gid, group in self.task_groups.items()},
            **self._partition_structure(),
            # Only when set: the other DAGs keep their version hashes.
            **({"owner_links": self.owner_links} if self.owner_links else {}),
            # Only a DAG scheduled by a timetable object has it: the others keep their hashes.
            **({"timetable": self._timetable} if self._timetable else {}),
            **timezone_structure(self.schedule, self.start_date),
            **self.run_options.structure(),
        }

    def _partition_structure(self) -> dict[str, Any]:
        # Only a partitioned DAG has these keys: the others keep their version hashes.
        if self._partition_mappers:
            return {"partition_mappers": self._partition_mappers}
        if isinstance(self.schedule, CronPartitionTimetable):
            return {"partitioned_by_cron": True}
        return {}

    def version_hash(self) -> str:
        return structure_hash(self.structure())


def structure_hash(structure: dict[str, Any]) -> str:
    """The version hash of a structure (``DAG.version_hash``, for one already built)."""
    text = json.dumps(structure, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _unique(node_id: str, taken: Callable[[str], bool]) -> str:
    if not taken(node_id):
        return node_id
    n = 1
    while taken(f"{node_id}__{n}"):
        n += 1
    return f"{node_id}__{n}"


def _as_list(value: str | list[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _aware(value: dt.datetime | None) -> dt.datetime | None:
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value


def _task_structure(task: Task, weight: int) -> dict[str, Any]:
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
        "group": task.group_id,
        "label": task.label,
        "display_name": options.task_display_name,
        "owner": options.owner,
        "upstream_labels": dict(sorted(task.upstream_labels.items())),
        "retry_exponential_backoff": options.retry_exponential_backoff,
        "max_retry_delay_seconds": (
            options.max_retry_delay.total_seconds() if options.max_retry_delay else None
        ),
        "doc_md": task_doc_md(options),
        "outlets": outlets_structure(options.outlets),
        **control_flow_structure(task),
        # What an operator adds for the store (an ExternalTaskMarker's target): others add nothing.
        **getattr(task.operator, "extra_structure", dict)(),
        **task_run_structure(options),
        **slot_structure(task, weight),
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
            options.setdefault("doc_md", inspect.cleandoc(function.__doc__ or "") or None)
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
