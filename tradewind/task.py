"""``@task``: TaskFlow tasks, as Airflow 3's ``airflow.sdk.task`` defines them.

Calling a decorated function inside a DAG adds a ``Task`` to that DAG and returns an
``XComArg``; the function itself runs later, in a task process forked by a worker's supervisor.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import inspect
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tradewind import dag_context
from tradewind.airflow2_names import note_airflow2_names
from tradewind.arguments import refuse_unsupported, take_default_only
from tradewind.dag_context import current_dag
from tradewind.dependencies import DependencyMixin
from tradewind.emails import check_email_options
from tradewind.exceptions import DagDefinitionError
from tradewind.mapped_group import group_mapping
from tradewind.mapping import KWARGS_LIST, BatchedTask, PartialTask
from tradewind.priority import check_slot_options
from tradewind.run_options import check_task_run_options
from tradewind.standard.options import check_task_options
from tradewind.trigger_rules import TriggerRule, trigger_rule_of
from tradewind.xcom_arg import XComArg, find_xcom_args, pull_xcom

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
    owner: str = "airflow"
    task_display_name: str | None = None
    doc_md: str | None = None
    # Each retry waits retry_delay * backoff ** (retries so far), at most max_retry_delay.
    retry_exponential_backoff: float = 0.0
    max_retry_delay: dt.timedelta | None = None
    retry_policy: Any = None
    on_retry_callback: Callback | None = None
    on_skipped_callback: Callback | None = None
    params: dict[str, Any] | None = None
    templates_dict: dict[str, Any] | None = None
    templates_exts: Sequence[str] | None = None
    # Assets (tradewind/assets.py): what a success updates, and what the task reads.
    outlets: Sequence[Any] = ()
    inlets: Sequence[Any] = ()
    # Run in the task process before the task's work (tradewind/standard/options.py).
    on_execute_callback: Callback | None = None
    do_xcom_push: bool = True  # False: the return value is not stored
    # Kept with the task; shown where doc_md is (tradewind/standard/options.py).
    doc: str | None = None
    doc_rst: str | None = None
    doc_json: str | None = None
    doc_yaml: str | None = None
    # Across runs (tradewind/run_options.py): wait for the previous run's try of this task (and
    # of its downstream); not run in a run whose logical date is after end_date.
    depends_on_past: bool = False
    wait_for_downstream: bool = False
    ignore_first_depends_on_past: bool = False
    end_date: dt.datetime | None = None
    # Email alerts, sent by the supervisor when a try fails for good or goes up for retry
    # (worker/supervisor/emails.py); as in Airflow, both flags are on once ``email`` is set.
    email: str | Sequence[str] | None = None
    email_on_failure: bool = True
    email_on_retry: bool = True
    # A mapped task instance's name, rendered after its try (tradewind/map_index_names.py).
    map_index_template: str | None = None
    # Slots (tradewind/priority.py): which waiting task goes first, how many slots it takes.
    priority_weight: int = 1
    weight_rule: Any = "downstream"
    pool_slots: int = 1
    max_active_tis_per_dag: int | None = None
    max_active_tis_per_dagrun: int | None = None

    def __post_init__(self) -> None:
        check_task_run_options(self)
        self.retry_delay = as_timedelta(self.retry_delay, "retry_delay")
        self.execution_timeout = as_timedelta(self.execution_timeout, "execution_timeout")
        self.max_retry_delay = as_timedelta(self.max_retry_delay, "max_retry_delay")
        self.retry_exponential_backoff = _backoff(self.retry_exponential_backoff)
        if self.retry_policy is not None and not callable(
            getattr(self.retry_policy, "evaluate", None)
        ):
            raise DagDefinitionError(
                f"retry_policy must be an ExceptionRetryPolicy, got {self.retry_policy!r}"
            )
        try:
            self.trigger_rule = trigger_rule_of(self.trigger_rule)
        except ValueError:
            allowed = ", ".join(rule.value for rule in TriggerRule)
            raise DagDefinitionError(
                f"trigger_rule {self.trigger_rule!r} is not one of: {allowed}"
            ) from None
        if not isinstance(self.retries, int) or self.retries < 0:
            raise DagDefinitionError(f"retries must be an integer >= 0, got {self.retries!r}")
        if self.task_concurrency < 1:
            raise DagDefinitionError(f"task_concurrency must be >= 1, got {self.task_concurrency}")
        check_task_options(self)
        check_email_options(self.email, self.email_on_failure, self.email_on_retry)
        check_slot_options(self)


def _backoff(value: Any) -> float:
    """``True`` doubles the delay at each retry, as in Airflow; a number > 1 is the factor."""
    if value is True:
        return 2.0
    if value is False or value == 0:
        return 0.0
    if isinstance(value, int | float) and value > 1:
        return float(value)
    raise DagDefinitionError(
        f"retry_exponential_backoff must be True, False or a factor > 1, got {value!r}"
    )


#: What ``default_args`` may set: the task options, minus what names one task.
DEFAULT_ARG_NAMES = frozenset(TaskOptions.__dataclass_fields__) - {"task_id", "command"}


def check_default_args(where: str, default_args: dict[str, Any] | None) -> dict[str, Any]:
    """``default_args`` with the default-only keys checked and removed; unknown keys refused."""
    checked = dict(default_args or {})
    take_default_only(f"{where} default_args", checked)
    refuse_unsupported(
        f"{where} default_args", {k: v for k, v in checked.items() if k not in DEFAULT_ARG_NAMES}
    )
    return checked


def task_options(where: str, options: dict[str, Any]) -> TaskOptions:
    """``TaskOptions`` of what ``@task(...)`` was given; an argument not supported is refused."""
    return TaskOptions(**option_names_checked(where, options))


def option_names_checked(where: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` without the default-only ones; an argument not supported is refused."""
    options = dict(options)
    take_default_only(where, options)
    refuse_unsupported(
        where, {k: v for k, v in options.items() if k not in TaskOptions.__dataclass_fields__}
    )
    return options


@dataclass(frozen=True)
class GivenOptions:
    """The options an operator was given, names checked: built into ``TaskOptions`` once, with
    the ``default_args`` under them, when the operator joins its DAG (``add_task``)."""

    where: str
    values: dict[str, Any]


@dataclass(eq=False)
class Task(DependencyMixin):
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
    task_group: Any = None
    label: str = ""  # the id given, before the groups' prefixes
    upstream_labels: dict[str, str] = field(default_factory=dict)  # edge Label()s by upstream
    operator: Any = None  # the BaseOperator this task runs, for classic operators
    # Control flow: a branch's or short circuit's Choice (tradewind/branching.py), and setup /
    # teardown roles (tradewind/setup_teardown.py).
    choice: Any = None
    is_setup: bool = False
    is_teardown: bool = False
    on_failure_fail_dagrun: bool = False

    @property
    def group_id(self) -> str | None:
        return self.task_group.group_id if self.task_group is not None else None

    def __getattr__(self, name: str) -> Any:
        # Options read like attributes, as on an Airflow operator (task.retries, task.queue...).
        options = self.__dict__.get("options")
        if options is not None and name in TaskOptions.__dataclass_fields__:
            return getattr(options, name)
        # A classic operator's own fields (``{{ task.subject }}``, ``task.sql``): as Airflow's
        # context gives the operator itself.
        operator = self.__dict__.get("operator")
        if operator is not None and not name.startswith("__"):
            return getattr(operator, name)
        raise AttributeError(name)

    @property
    def is_runtime(self) -> bool:
        return self.options.command is not None

    def render_template(self, content: Any, context: dict[str, Any]) -> Any:
        """``content`` rendered with ``context`` (as ``context["task"].render_template``)."""
        from tradewind.templates import render_value

        def resolve(arg: XComArg) -> Any:
            return pull_xcom(arg, context["ti"])

        exts = tuple(self.options.templates_exts or ())
        return render_value(content, context, self.dag, resolve, exts, f"task {self.task_id}")

    def roots(self) -> list[Task]:
        return [self]

    def leaves(self) -> list[Task]:
        return [self]


class TaskDecorator:
    """A decorated function: call it in a DAG to add a task; ``.override`` changes options."""

    def __init__(
        self,
        function: Callable[..., Any] | None,
        options: TaskOptions,
        explicit: Iterable[str] = (),
    ) -> None:
        self.function = function
        self.options = options
        # The options given here, which default_args of the DAG or a group do not override.
        self.explicit = frozenset(explicit)
        if function is not None:
            functools.update_wrapper(self, function)

    def override(self, **changes: Any) -> TaskDecorator:
        task_options(f"{self.default_task_id}.override()", changes)
        changed = replace(self.options, **changes)
        return TaskDecorator(self.function, changed, self.explicit | changes.keys())

    def __call__(self, *args: Any, **kwargs: Any) -> XComArg:
        return XComArg(self._add_task(args, kwargs))

    # Mapping (tradewind/mapping.py): .partial(...) then .expand / .iterate / .batch(size=k).
    def partial(self, **kwargs: Any) -> PartialTask:
        return PartialTask(self, kwargs)

    def expand(self, **mapped: Any) -> XComArg:
        return self.partial().expand(**mapped)

    def iterate(self, **mapped: Any) -> XComArg:
        return self.partial().iterate(**mapped)

    def expand_kwargs(self, kwargs_list: Any) -> XComArg:
        return self.partial().expand_kwargs(kwargs_list)

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
        label = self.options.task_id or self.default_task_id
        return add_task(
            dag, label, self.function, self.options, self.explicit, args, kwargs, mapping
        )

    @property
    def default_task_id(self) -> str:
        return self.function.__name__ if self.function is not None else "runtime"


def add_task(
    dag: Any,
    label: str,
    function: Callable[..., Any] | None,
    options: TaskOptions | GivenOptions,
    explicit: frozenset[str],
    args: tuple[Any, ...] = (),
    kwargs: dict[str, Any] | None = None,
    mapping: dict[str, Any] | None = None,
) -> Task:
    """A new task of ``dag`` in the open task group: its id prefixed, the ``default_args`` of
    the DAG and its groups under the options given, upstreams from the XComArgs it takes."""
    group = dag_context.current_group(dag)
    inherited = group_mapping(group)
    if inherited is not None:
        if mapping is not None:
            raise DagDefinitionError(
                f"task {label}: .{mapping['kind']}() inside the mapped task group "
                f"{inherited['group']} is not supported: the group maps its tasks already"
            )
        mapping = inherited
    task = Task(
        task_id=dag.unique_task_id(group.child_id(label) if group else label),
        python_callable=function,
        options=_options_in(dag, group, options, explicit),
        args=args,
        kwargs=kwargs or {},
        mapping=mapping,
        task_group=group,
        label=label,
    )
    dag.add_task(task)
    if not isinstance(options, GivenOptions):  # an operator's are noted as it joins
        note_airflow2_names(function, (args, kwargs, task.options.templates_dict))
    for upstream in find_xcom_args((args, kwargs, mapping)):
        task.set_upstream(upstream.task)
    return task


def _options_in(
    dag: Any, group: Any, options: TaskOptions | GivenOptions, explicit: frozenset[str]
) -> TaskOptions:
    """``options`` with the DAG's and the groups' ``default_args`` under those given."""
    defaults = group.merged_default_args() if group is not None else dict(dag.default_args)
    if isinstance(options, GivenOptions):
        return TaskOptions(**{**defaults, **options.values})
    unset = {k: v for k, v in defaults.items() if k not in explicit}
    return replace(options, **unset) if unset else options


def _check_signature(
    function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], mapping: Any
) -> None:
    mapped = dict(mapping.get("kwargs", {})) if mapping else {}
    if KWARGS_LIST in mapped:  # .expand_kwargs: each item names its own arguments
        literal = mapped.pop(KWARGS_LIST)
        items = literal if isinstance(literal, list | tuple) else [{}]
        for item in items:
            _check_signature(function, args, {**kwargs, **dict(item)}, None)
        return
    try:
        _signature(function).bind_partial(*args, **kwargs, **mapped)
    except TypeError as error:
        raise DagDefinitionError(f"{function.__name__}: {error}") from None


#: Signatures by function: a task function called in a loop or a group is inspected once.
_SIGNATURES: weakref.WeakKeyDictionary[Callable[..., Any], inspect.Signature] = (
    weakref.WeakKeyDictionary()
)


def _signature(function: Callable[..., Any]) -> inspect.Signature:
    try:
        return _SIGNATURES[function]
    except (KeyError, TypeError):  # not seen yet; or a callable a weak reference cannot hold
        pass
    found = inspect.signature(function)
    with contextlib.suppress(TypeError):
        _SIGNATURES[function] = found
    return found


def task(python_callable: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Make a TaskFlow task of a function: ``@task`` or ``@task(retries=2, ...)``."""
    parsed = task_options("@task", options)
    if python_callable is not None:
        return TaskDecorator(python_callable, parsed, options)
    return lambda function: TaskDecorator(function, parsed, options)


def runtime(
    command: Sequence[str], **options: Any
) -> Callable[[Callable[..., Any]], TaskDecorator]:
    """``@task.runtime(command=[...])``: the task runs ``command`` (any language) under the
    supervisor's protocol; the decorated function names the task and its arguments."""
    if isinstance(command, str) or not command:
        raise DagDefinitionError("@task.runtime(command=[...]) takes a non-empty list of strings")
    parsed = task_options("@task.runtime", {"command": list(command), **options})
    return lambda function: TaskDecorator(function, parsed, ["command", *options])


task.runtime = runtime  # type: ignore[attr-defined]


def _not_yet(kind: str, feature: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise DagDefinitionError(f"@task.{kind} is not supported by Tradewind yet ({feature})")

    return refuse


# Airflow's task kinds Tradewind lacks (branch, short_circuit, bash, sensor, virtualenv and the
# standard provider's are registered by their own modules): a DAG file using one fails its
# import naming it, never at run time.
for _kind, _feature in {
    "docker": "docker tasks",
    "kubernetes": "kubernetes tasks",
    "pyspark": "pyspark tasks",
}.items():
    setattr(task, _kind, _not_yet(_kind, _feature))
