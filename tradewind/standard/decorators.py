"""The standard provider's ``@task.*`` decorators (``airflow.providers.standard.decorators``).

Most are Tradewind's own TaskFlow decorators under the provider's names (``python_task`` is
``@task``, ``bash_task`` is ``@task.bash``...). Three are added here, and registered on
``task``: ``@task.external_python(python=...)`` runs the function with the interpreter given,
used as it is; ``@task.branch_virtualenv`` and ``@task.branch_external_python`` are those that
choose the task ids to follow, as ``@task.branch`` does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tradewind.bash import bash as bash_task
from tradewind.branching import Choice, ChoosingDecorator
from tradewind.branching import branch as branch_task
from tradewind.branching import short_circuit as short_circuit_task
from tradewind.context import get_current_context
from tradewind.exceptions import DagDefinitionError
from tradewind.sensors import sensor as sensor_task
from tradewind.task import TaskDecorator, task, task_options
from tradewind.virtualenv import (
    FRESH_PROCESS,
    SERIALIZERS,
    VenvCall,
    call_in_venv,
    function_source,
    venv_call,
)
from tradewind.virtualenv import virtualenv as virtualenv_task

__all__ = [
    "bash_task",
    "branch_external_python_task",
    "branch_task",
    "branch_virtualenv_task",
    "external_python_task",
    "python_task",
    "sensor_task",
    "short_circuit_task",
    "virtualenv_task",
]


def python_task(python_callable: Callable[..., Any] | None = None, **options: Any) -> Any:
    """``@task`` under the provider's name."""
    return task(python_callable, **options)


def external_python_task(
    python: str | None = None,
    python_callable: Callable[..., Any] | None = None,
    *,
    serializer: str | None = None,
    expect_airflow: bool = True,
    skip_on_exit_code: int | Sequence[int] | None = None,
    env_vars: dict[str, str] | None = None,
    inherit_env: bool = True,
    **options: Any,
) -> Any:
    """``@task.external_python(python="/venv/bin/python")``: the function's source runs with
    that interpreter; arguments and result travel as JSON, as for ``@task.virtualenv``."""
    if not python or not isinstance(python, str):
        raise DagDefinitionError(
            f"@task.external_python: python must be the path of a Python interpreter, "
            f"got {python!r}"
        )
    if serializer is not None and serializer not in SERIALIZERS:
        raise DagDefinitionError(
            f"@task.external_python: serializer must be one of {sorted(SERIALIZERS)}, "
            f"got {serializer!r}"
        )
    parsed = task_options("@task.external_python", options)
    how = venv_call(skip_on_exit_code, env_vars, inherit_env)

    def decorate(function: Callable[..., Any]) -> TaskDecorator:
        return TaskDecorator(_with_python(function, Path(python), how), parsed, options)

    return decorate(python_callable) if python_callable is not None else decorate


def _with_python(function: Callable[..., Any], python: Path, how: VenvCall) -> Callable[..., Any]:
    source = function_source(function)

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        context = get_current_context()
        where = f"task {context['ti'].task_id}"
        if not python.is_file():
            raise FileNotFoundError(f"{where}: python {str(python)!r} not found")
        # The context stays here (a ``ti`` is no JSON): only the task's own arguments travel.
        given = {k: v for k, v in kwargs.items() if not (k in context and v is context[k])}
        return call_in_venv(python, source, function.__name__, args, given, where, how)

    setattr(run, FRESH_PROCESS, True)
    return run


def _branching(make: Callable[..., Any], python_callable: Any, **options: Any) -> Any:
    """``make``'s decorator whose tasks choose the ids to follow, as ``@task.branch``."""

    def decorate(function: Callable[..., Any]) -> ChoosingDecorator:
        plain: TaskDecorator = make(**options)(function)
        return ChoosingDecorator(plain.function, plain.options, plain.explicit, Choice("branch"))

    return decorate(python_callable) if python_callable is not None else decorate


def branch_virtualenv_task(
    python_callable: Callable[..., Any] | None = None, **options: Any
) -> Any:
    """``@task.branch_virtualenv(requirements=...)``: returns the task id(s) to follow."""
    return _branching(virtualenv_task, python_callable, **options)


def branch_external_python_task(
    python: str | None = None, python_callable: Callable[..., Any] | None = None, **options: Any
) -> Any:
    """``@task.branch_external_python(python=...)``: returns the task id(s) to follow."""
    return _branching(external_python_task, python_callable, python=python, **options)


task.external_python = external_python_task  # type: ignore[attr-defined]
task.branch_virtualenv = branch_virtualenv_task  # type: ignore[attr-defined]
task.branch_external_python = branch_external_python_task  # type: ignore[attr-defined]
