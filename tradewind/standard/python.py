"""``PythonOperator``, ``BranchPythonOperator`` and ``ShortCircuitOperator``, as the standard
provider defines them.

The callable gets ``op_args`` and ``op_kwargs`` (templated, with ``templates_dict``), and the
context's keys the way Airflow passes them: every key when it takes ``**kwargs``, else the keys
it names as parameters; ``op_kwargs`` and ``templates_dict`` are merged into the context first.
Its return value is the task's XCom (logged unless ``show_return_value_in_logs=False``). A
branch's value is the ids to follow; a short circuit's falsy value skips what follows.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, ClassVar

from tradewind.branching import Choice
from tradewind.context import get_current_context
from tradewind.exceptions import DagDefinitionError
from tradewind.operators import BaseOperator
from tradewind.spellings import airflow2_spelling
from tradewind.standard.branch import ChoosingOperator

__all__ = [
    "BranchPythonOperator",
    "PythonOperator",
    "ShortCircuitOperator",
    "determine_kwargs",
    "get_current_context",
]

_NOT_GIVEN: Any = object()


class PythonOperator(BaseOperator):
    """``PythonOperator(task_id=..., python_callable=..., op_args=..., op_kwargs=...)``."""

    template_fields: ClassVar[Sequence[str]] = ("templates_dict", "op_args", "op_kwargs")

    def __init__(
        self,
        *,
        python_callable: Callable[..., Any],
        op_args: Collection[Any] | None = None,
        op_kwargs: Mapping[str, Any] | None = None,
        templates_dict: dict[str, Any] | None = None,
        templates_exts: Sequence[str] | None = None,
        show_return_value_in_logs: bool = True,
        provide_context: Any = _NOT_GIVEN,
        **kwargs: Any,
    ) -> None:
        name = f"{type(self).__name__} {kwargs.get('task_id', '')}".strip()
        if not callable(python_callable):
            raise DagDefinitionError(f"{name}: python_callable must be callable")
        if provide_context is not _NOT_GIVEN:
            airflow2_spelling(
                f"{type(self).__name__}(provide_context=...)",
                "no argument: the callable gets the context keys it names, or all with **kwargs",
            )
        self.python_callable = python_callable
        self.op_args = list(op_args or ())
        self.op_kwargs = dict(op_kwargs or {})
        self.templates_dict = templates_dict
        if templates_exts:
            # This operator's own extensions (template_ext is the class's otherwise).
            vars(self)["template_ext"] = tuple(templates_exts)
        self.show_return_value_in_logs = bool(show_return_value_in_logs)
        super().__init__(**kwargs)

    def execute(self, context: dict[str, Any]) -> Any:
        # As Airflow's context_merge: the callable (and get_current_context) sees them.
        context.update(self.op_kwargs)
        context["templates_dict"] = self.templates_dict
        keywords = determine_kwargs(self.python_callable, self.op_args, context)
        result = self.execute_callable(keywords)
        if self.show_return_value_in_logs:
            print(f"Done. Returned value was: {result!r}", flush=True)
        else:
            print("Done. Returned value not shown", flush=True)
        return result

    def execute_callable(self, keywords: Mapping[str, Any]) -> Any:
        """Call the callable with ``op_args`` and ``keywords``; an ``async def`` one is awaited."""
        result = self.python_callable(*self.op_args, **keywords)
        if inspect.iscoroutine(result):
            result = asyncio.run(result)
        return result


def determine_kwargs(
    function: Callable[..., Any], args: Collection[Any], context: Mapping[str, Any]
) -> dict[str, Any]:
    """The keyword arguments Airflow passes ``function``: all of ``context`` when it takes
    ``**kwargs``, else the keys it names; a positional argument may not take a context key."""
    parameters = inspect.signature(function).parameters
    for name, parameter in list(parameters.items())[: len(args)]:
        positional = parameter.kind not in (parameter.KEYWORD_ONLY, parameter.VAR_KEYWORD)
        if positional and name in context:
            raise ValueError(
                f"{getattr(function, '__name__', function)}: op_args fills parameter {name!r}, "
                "a context key: rename the parameter or pass it in op_kwargs"
            )
    if any(parameter.kind is parameter.VAR_KEYWORD for parameter in parameters.values()):
        return dict(context)
    return {name: context[name] for name in parameters if name in context}


class BranchPythonOperator(ChoosingOperator, PythonOperator):
    """The callable returns the task or task group id(s) to follow; the other direct
    downstream tasks are skipped (all of them when it returns None)."""


class ShortCircuitOperator(ChoosingOperator, PythonOperator):
    """A falsy result skips what follows: everything downstream, or with
    ``ignore_downstream_trigger_rules=False`` the direct downstream tasks only."""

    def __init__(self, *, ignore_downstream_trigger_rules: bool = True, **kwargs: Any) -> None:
        self.ignore_downstream_trigger_rules = bool(ignore_downstream_trigger_rules)
        super().__init__(**kwargs)

    def choice(self) -> Choice:
        return Choice("short_circuit", self.ignore_downstream_trigger_rules)

    def execute(self, context: dict[str, Any]) -> Any:
        condition = super().execute(context)
        if condition:
            print("Condition is true: proceeding with downstream tasks", flush=True)
        else:
            print("Condition is false: skipping downstream tasks", flush=True)
        return condition
