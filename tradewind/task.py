"""``@task``: TaskFlow tasks, as Airflow 3's ``airflow.sdk.task`` defines them.

Calling a decorated function inside a DAG adds a ``Task`` to that DAG and returns an
``XComArg``; the function itself runs later, in a task process forked by a worker's supervisor.
"""

from __future__ import annotations

import datetime as dt
import functools
import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tradewind.dag_context import current_dag
from tradewind.exceptions import DagDefinitionError
from tradewind.mapping import BatchedTask, PartialTask
from tradewind.trigger_rules import TriggerRule
from tradewind.xcom_arg import XComArg, find_xcom_args

Callback = Callable[[dict[str, Any]], None]


def as_timedelta(value: dt.timedelta | float | int | None, name: str) -> dt.timedelta | None:
    """Accept a timedelta or a number of seconds, as Airflow does for ``retry_delay``."""
    if value is None or isinstance(value, dt.timedelta):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return dt.timedelta(seconds=value)
    raise DagDefinitionError(f"{name} must be a timedelta or seconds >= 0, got {value!r}")


@dataclass
class TaskOptions:
    """What ``@task(...)`` and ``.override(...)`` accept."""

    task_id: str | None = None
    retries: int = 0
    retry_delay: dt.timedelta | None = dt.timedelta(seconds=300)
    execution_timeout: dt.timedelta | None = None
    queue: str = "default"
    pool: str = "default_pool"
    trigger_rule: TriggerRule = TriggerRule.ALL_SUCCESS
    on_success_callback: Callback | None = None
    on_failure_callback: Callback | None = None
    multiple_outputs: bool = False
    task_concurrency: int = 16
    fail_fast: bool = False
    command: Sequence[str] | None = None

    def __post_init__(self) -> None:
        self.retry_delay = as_timedelta(self.retry_delay, "retry_delay")
        self.execution_timeout = as_timedelta(self.execution_timeout, "execution_timeout")
        try:
            self.trigger_rule = TriggerRule(self.trigger_rule)
        except ValueError:
            allowed = ", ".join(rule.value for rule in TriggerRule)
            raise DagDefinitionError(
                f"trigger_rule {self.trigger_rule!r} is not one of: {allowed}"
            ) from None
        if not isinstance(self.retries, int) or self.retries < 0:
            raise DagDefinitionError(f"retries must be an integer >= 0, got {self.retries!r}")
        if self.task_concurrency < 1:
            raise DagDefinitionError(f"task_concurrency must be >= 1, got {self.task_concurrency}")


@dataclass(eq=False)
class Task:
    """One node of a DAG: the callable, its options and its arguments (XComArgs unresolved)."""

    task_id: str
    python_callable: Callable[..., Any] | None
    options: TaskOptions
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    upstream_task_ids: set[str] = field(default_factory=set)
    downstream_task_ids: set[str] = field(default_factory=set)
    dag: Any = None
    # Set by .expand / .iterate (the mapping issue): how the arguments are spread over items.
    mapping: dict[str, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        # Options read like attributes, as on an Airflow operator (task.retries, task.queue...).
        options = self.__dict__.get("options")
        if options is not None and name in TaskOptions.__dataclass_fields__:
            return getattr(options, name)
        raise AttributeError(name)

    @property
    def is_runtime(self) -> bool:
        return self.options.command is not None

    def set_upstream(self, other: Task | XComArg | Iterable[Task | XComArg]) -> None:
        for upstream in _tasks_of(other):
            if upstream.dag is not self.dag:
                raise DagDefinitionError(
                    f"{upstream.task_id} and {self.task_id} are in different DAGs"
                )
            self.upstream_task_ids.add(upstream.task_id)
            upstream.downstream_task_ids.add(self.task_id)

    def set_downstream(self, other: Task | XComArg | Iterable[Task | XComArg]) -> None:
        for downstream in _tasks_of(other):
            downstream.set_upstream(self)

    def __rshift__(self, other: Any) -> Any:
        self.set_downstream(other)
        return other

    def __lshift__(self, other: Any) -> Any:
        self.set_upstream(other)
        return other

    def __rrshift__(self, other: Any) -> Task:
        self.set_upstream(other)
        return self

    def __rlshift__(self, other: Any) -> Task:
        self.set_downstream(other)
        return self


def _tasks_of(value: Task | XComArg | Iterable[Task | XComArg]) -> list[Task]:
    if isinstance(value, Task):
        return [value]
    if isinstance(value, XComArg):
        return [value.task]
    if isinstance(value, list | tuple | set):
        return [task for item in value for task in _tasks_of(item)]
    raise DagDefinitionError(
        f"cannot depend on {value!r}: use a task, a task's result, or a list of them"
    )


class TaskDecorator:
    """A decorated function: call it in a DAG to add a task; ``.override`` changes options."""

    def __init__(self, function: Callable[..., Any] | None, options: TaskOptions) -> None:
        self.function = function
        self.options = options
        if function is not None:
            functools.update_wrapper(self, function)

    def override(self, **changes: Any) -> TaskDecorator:
        return TaskDecorator(self.function, replace(self.options, **changes))

    def __call__(self, *args: Any, **kwargs: Any) -> XComArg:
        return XComArg(self._add_task(args, kwargs))

    # Mapping (tradewind/mapping.py): .partial(...) then .expand / .iterate / .batch(size=k).
    def partial(self, **kwargs: Any) -> PartialTask:
        return PartialTask(self, kwargs)

    def expand(self, **mapped: Any) -> XComArg:
        return self.partial().expand(**mapped)

    def iterate(self, **mapped: Any) -> XComArg:
        return self.partial().iterate(**mapped)

    def batch(self, size: int) -> BatchedTask:
        return self.partial().batch(size)

    def _add_task(self, args: tuple[Any, ...], kwargs: dict[str, Any], mapping: Any = None) -> Task:
        dag = current_dag()
        if dag is None:
            raise DagDefinitionError(
                f"task {self.default_task_id} called outside a DAG: call it inside a @dag "
                "function or a `with DAG(...)` block"
            )
        if self.function is not None:
            _check_signature(self.function, args, kwargs, mapping)
        task = Task(
            task_id=dag.unique_task_id(self.options.task_id or self.default_task_id),
            python_callable=self.function,
            options=self.options,
            args=args,
            kwargs=kwargs,
            mapping=mapping,
        )
        dag.add_task(task)
        for upstream in find_xcom_args((args, kwargs, mapping)):
            task.set_upstream(upstream.task)
        return task

    @property
    def default_task_id(self) -> str:
        return self.function.__name__ if self.function is not None else "runtime"


def _check_signature(
    function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], mapping: Any
) -> None:
    mapped = dict(mapping.get("kwargs", {})) if mapping else {}
    try:
        inspect.signature(function).bind_partial(*args, **kwargs, **mapped)
    except TypeError as error:
        raise DagDefinitionError(f"{function.__name__}: {error}") from None


def task(python_callable: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Make a TaskFlow task of a function: ``@task`` or ``@task(retries=2, ...)``."""
    try:
        parsed = TaskOptions(**options)
    except TypeError as error:
        raise DagDefinitionError(f"@task: {error}") from None
    if python_callable is not None:
        return TaskDecorator(python_callable, parsed)
    return lambda function: TaskDecorator(function, parsed)


def runtime(
    command: Sequence[str], **options: Any
) -> Callable[[Callable[..., Any]], TaskDecorator]:
    """``@task.runtime(command=[...])``: the task runs ``command`` (any language) under the
    supervisor's protocol; the decorated function names the task and its arguments."""
    if isinstance(command, str) or not command:
        raise DagDefinitionError("@task.runtime(command=[...]) takes a non-empty list of strings")
    parsed = TaskOptions(command=list(command), **options)
    return lambda function: TaskDecorator(function, parsed)


task.runtime = runtime  # type: ignore[attr-defined]
