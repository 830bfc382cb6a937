"""Classic operators: ``BaseOperator`` subclasses with ``execute(context)``, as in Airflow.

An operator made inside a DAG becomes a task whose function renders the operator's
``template_fields`` (Jinja, results of upstream tasks resolved) and calls ``execute`` with the
try's context; what ``execute`` returns is the task's ``return_value`` XCom, and ``.output``
stands for it. ``Op.partial(task_id=..., ...).expand(x=...)`` maps an operator: each map index
builds its own operator in the task process from the partial and its item, then runs it.
Task options (``retries``, ``pool``, ``trigger_rule``...) are keyword arguments of the
operator, as Airflow's are.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Sequence
from typing import Any, ClassVar, NoReturn

from tradewind.airflow2_names import note_airflow2_names
from tradewind.context import get_current_context
from tradewind.dag_context import current_dag, current_group
from tradewind.dependencies import DependencyMixin, SetupTeardownMixin
from tradewind.exceptions import DagDefinitionError
from tradewind.logging_mixin import LoggingMixin
from tradewind.mapped_group import check_not_nested
from tradewind.mapping import EXPAND, KWARGS_LIST, build_mapping
from tradewind.task import (
    GivenOptions,
    Task,
    TaskOptions,
    add_task,
    option_names_checked,
    task_options,
)
from tradewind.templates import kwargs_of_index, render_value
from tradewind.triggers.base import RESUMING, TaskDeferred
from tradewind.xcom_arg import XComArg, find_xcom_args, pull_xcom

#: Set while a mapped operator is built in its task process: it joins no DAG.
_UNMAPPING: contextvars.ContextVar[bool] = contextvars.ContextVar("unmapping", default=False)


class _OperatorMeta(type):
    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        # The subclass's __init__ has set its fields: now the task can see them.
        operator = super().__call__(*args, **kwargs)
        if not _UNMAPPING.get():
            operator._join_dag()
        return operator


class BaseOperator(LoggingMixin, SetupTeardownMixin, DependencyMixin, metaclass=_OperatorMeta):
    """Subclass it and define ``execute(self, context)``; ``self.log`` writes to the try's log."""

    template_fields: ClassVar[Sequence[str]] = ()
    template_ext: ClassVar[Sequence[str]] = ()

    def __init__(self, *, task_id: str, **options: Any) -> None:
        if not isinstance(task_id, str) or not task_id:
            raise DagDefinitionError(f"{type(self).__name__}: task_id must be a non-empty string")
        if type(self).execute is BaseOperator.execute:
            raise DagDefinitionError(f"{type(self).__name__} must define execute(self, context)")
        self.task_id = task_id
        # ``dag=dag``: the DAG to join when made outside its ``with`` block, as Airflow 2 files do.
        self._dag = options.pop("dag", None)
        self._pre_execute = _callable_or_none(options.pop("pre_execute", None), "pre_execute")
        self._post_execute = _callable_or_none(options.pop("post_execute", None), "post_execute")
        self._explicit = frozenset(options)
        where = f"{type(self).__name__} {task_id}"
        self._options = GivenOptions(where, option_names_checked(where, options))
        self._task: Task | None = None

    def execute(self, context: dict[str, Any]) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define execute(self, context)")

    def defer(
        self,
        *,
        trigger: Any,
        method_name: str,
        kwargs: dict[str, Any] | None = None,
        timeout: Any = None,
    ) -> NoReturn:
        """End this try as ``deferred`` until ``trigger`` fires, then resume it in
        ``method_name(context, event=payload, **kwargs)`` (DESIGN.md §12); ``timeout`` (a
        timedelta or seconds) fails the task if the trigger has not fired by then."""
        raise TaskDeferred(trigger=trigger, method_name=method_name, kwargs=kwargs, timeout=timeout)

    def resume_execution(
        self, next_method: str, next_kwargs: dict[str, Any] | None, context: dict[str, Any]
    ) -> Any:
        """Call the method a deferred try resumes in (Airflow's name for this step)."""
        method = getattr(self, next_method, None)
        if not callable(method):
            raise AttributeError(
                f"{type(self).__name__} {self.task_id} has no method {next_method!r} to resume in"
            )
        return method(context, **(next_kwargs or {}))

    def _join_dag(self) -> None:
        dag = current_dag() if self._dag is None else self._dag
        if dag is None:
            raise DagDefinitionError(f"operator {self.task_id} made outside a DAG")
        # Its fields would not pick the map index's item: only TaskFlow tasks map in a group.
        check_not_nested(current_group(dag), f"the classic operator {self.task_id}")
        run = functools.partial(run_operator, self)
        self._task = add_task(dag, self.task_id, run, self._options, self._explicit)
        self._task.operator = self
        self.task_id = self._task.task_id  # with its groups' prefixes
        for name in self.template_fields:
            for upstream in find_xcom_args(getattr(self, name, None)):
                self._task.set_upstream(upstream.task)
        fields = [getattr(self, name, None) for name in self.template_fields]
        fields.append(self._task.options.templates_dict)
        note_airflow2_names(getattr(self, "python_callable", None), fields)

    def __setattr__(self, name: str, value: Any) -> None:
        # ``op.trigger_rule = ...`` / ``op.doc_md = ...`` after the operator is made, as Airflow
        # DAG files do: a task option (never one the operator keeps as its own) changes the task.
        task = self.__dict__.get("_task") if name in _OPTION_NAMES else None
        if task is not None and name not in self.__dict__:
            task.options = task_options(
                f"{type(self).__name__} {self.task_id}", {**_given(task.options), name: value}
            )
            return
        super().__setattr__(name, value)

    def __getattr__(self, name: str) -> Any:
        task = self.__dict__.get("_task")
        if task is not None and name in _OPTION_NAMES:
            return getattr(task.options, name)
        raise AttributeError(name)

    @property
    def task(self) -> Task:
        if self._task is None:
            raise DagDefinitionError(f"operator {self.task_id} is not in a DAG")
        return self._task

    @property
    def output(self) -> XComArg:
        """The operator's result (``return_value``), to pass to other tasks."""
        return XComArg(self.task)

    @property
    def dag(self) -> Any:
        return self.task.dag

    def roots(self) -> list[Task]:
        return [self.task]

    def leaves(self) -> list[Task]:
        return [self.task]

    def render_template_fields(self, context: dict[str, Any]) -> None:
        """Render each templated field in place (once per try, before ``execute``)."""

        def resolve(arg: XComArg) -> Any:
            return pull_xcom(arg, context["ti"])

        for name in self.template_fields:
            value = getattr(self, name)
            where = f"{self.task_id} field {name}"
            rendered = render_value(value, context, self.dag, resolve, self.template_ext, where)
            setattr(self, name, rendered)

    @classmethod
    def partial(cls, **kwargs: Any) -> OperatorPartial:
        return OperatorPartial(cls, kwargs)


#: The task options an operator's attribute may set after it is made.
_OPTION_NAMES = frozenset(TaskOptions.__dataclass_fields__) - {"task_id", "command"}


def _given(options: TaskOptions) -> dict[str, Any]:
    return {name: getattr(options, name) for name in _OPTION_NAMES}


def _callable_or_none(value: Any, name: str) -> Any:
    if value is not None and not callable(value):
        raise DagDefinitionError(f"{name} must be a callable, got {value!r}")
    return value


def run_operator(operator: BaseOperator) -> Any:
    """The task function of an operator: render its templated fields, then ``execute``, between
    the ``pre_execute(context)`` and ``post_execute(context, result)`` it was given."""
    context = get_current_context()
    operator.render_template_fields(context)
    if operator._pre_execute is not None:
        operator._pre_execute(context)
    resume = RESUMING.get()
    if resume is not None:  # a deferred try resuming: its method, not execute
        result = operator.resume_execution(resume.method_name, resume.kwargs, context)
    else:
        result = operator.execute(context)
    if operator._post_execute is not None:
        operator._post_execute(context, result)
    return result


class OperatorPartial:
    """``Op.partial(task_id=..., ...)``: call ``.expand(...)`` on it."""

    def __init__(self, cls: type[BaseOperator], kwargs: dict[str, Any]) -> None:
        if "task_id" not in kwargs:
            raise DagDefinitionError(f"{cls.__name__}.partial() needs a task_id")
        self.cls = cls
        self.kwargs = kwargs

    def expand(self, **mapped: Any) -> MappedOperator:
        """One task instance per item; each builds ``cls(**partial, **its item)``."""
        both = sorted(mapped.keys() & self.kwargs.keys())
        if both:
            raise DagDefinitionError(
                f"{self.cls.__name__}: {both} given to .partial() and .expand()"
            )
        return self._mapped(build_mapping(EXPAND, mapped, None), tuple(mapped))

    def expand_kwargs(self, kwargs_list: Any) -> MappedOperator:
        """One task instance per dict of ``kwargs_list``, built with that dict's arguments."""
        mapping = build_mapping(EXPAND, {KWARGS_LIST: kwargs_list}, None)
        mapping["per_index"] = True
        return self._mapped(mapping, (KWARGS_LIST,))

    def _mapped(self, mapping: dict[str, Any], names: tuple[str, ...]) -> MappedOperator:
        dag = current_dag()
        if dag is None:
            raise DagDefinitionError(f"operator {self.kwargs['task_id']} made outside a DAG")
        arguments = _init_arguments(self.cls)
        options = {k: v for k, v in self.kwargs.items() if k not in arguments and k != "task_id"}
        parsed = task_options(f"{self.cls.__name__} {self.kwargs['task_id']}", options)
        run = functools.partial(run_mapped_operator, self.cls, self.kwargs, names)
        label = self.kwargs["task_id"]
        task = add_task(dag, label, run, parsed, frozenset(options), (), {}, mapping)
        for upstream in find_xcom_args(self.kwargs):
            task.set_upstream(upstream.task)
        return MappedOperator(task)


def _init_arguments(cls: type[BaseOperator]) -> set[str]:
    """The named parameters of the operator class's ``__init__`` and its bases'."""
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is not None and klass is not BaseOperator:
            names |= {
                name
                for name, parameter in inspect.signature(init).parameters.items()
                if parameter.kind not in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL)
            }
    return names - {"self"}


def run_mapped_operator(
    cls: type[BaseOperator], partial: dict[str, Any], names: tuple[str, ...], **given: Any
) -> Any:
    """Build this map index's operator from the partial and its item, then run it."""
    context = get_current_context()

    def resolve(arg: XComArg) -> Any:
        return pull_xcom(arg, context["ti"])

    fixed = _resolved(partial, resolve)
    if names == (KWARGS_LIST,):  # .expand_kwargs: this map index's dict
        own = kwargs_of_index(context["task"], context, resolve)
    else:  # the function gets the context's keys too (it takes **kwargs): keep the items
        own = {name: given[name] for name in names}
    token = _UNMAPPING.set(True)
    try:
        operator = cls(**fixed, **own)
    finally:
        _UNMAPPING.reset(token)
    operator._task = context["task"]
    return run_operator(operator)


def _resolved(value: Any, resolve: Any) -> Any:
    """``value`` with the XComArgs inside it replaced by their values."""
    if isinstance(value, XComArg):
        return resolve(value)
    if isinstance(value, list | tuple):
        return type(value)(_resolved(item, resolve) for item in value)
    if isinstance(value, dict):
        return {key: _resolved(item, resolve) for key, item in value.items()}
    return value


class MappedOperator(DependencyMixin):
    """What ``.expand`` returns: the mapped task, its ``.output`` and dependencies."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.task_id = task.task_id

    @property
    def output(self) -> XComArg:
        return XComArg(self.task)

    def roots(self) -> list[Task]:
        return [self.task]

    def leaves(self) -> list[Task]:
        return [self.task]
