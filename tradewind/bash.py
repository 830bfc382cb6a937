"""``@task.bash`` and ``BashOperator``: a task whose work is a bash command, as in Airflow 3.

The decorated function returns the command (rendered with Jinja like any templated field); the
task process runs it with ``bash -c`` as its child, in its process group, so the supervisor's
SIGTERM and SIGKILL (timeout, a cleared try) reach the command too. The command's stdout is
copied line by line to the task's stdout and its stderr goes straight to the task's: both land
in the try's log. The last line of stdout is the task's XCom. Exit code ``skip_on_exit_code``
(99 unless told) skips the task; any other non-zero exit fails it with one line naming the code.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any

from tradewind.context import get_current_context
from tradewind.exceptions import DagDefinitionError, SkipTask
from tradewind.task import TaskDecorator, task_options
from tradewind.xcom_arg import find_xcom_args

SKIP_EXIT_CODE = 99


class BashCommandFailed(RuntimeError):
    """The command exited non-zero (and not with a skip code): the try fails, retries apply."""


@dataclass(frozen=True)
class BashOptions:
    """How a bash command runs: its environment, folder, the exit codes that skip, and how its
    output is decoded."""

    env: Mapping[str, str] | None = None
    append_env: bool = False
    cwd: str | None = None
    skip_on_exit_code: Collection[int] = (SKIP_EXIT_CODE,)
    output_encoding: str = "utf-8"

    def environment(self, context_vars: Mapping[str, str]) -> dict[str, str]:
        """The task process's own without ``env``; ``env`` alone, or over the task process's
        with ``append_env``; then ``context_vars`` (``AIRFLOW_CTX_*``), as in Airflow."""
        given = {str(key): str(value) for key, value in (self.env or {}).items()}
        inherited = os.environ if self.env is None or self.append_env else {}
        return {**inherited, **given, **context_vars}


def context_vars(context: Mapping[str, Any]) -> dict[str, str]:
    """Airflow's ``AIRFLOW_CTX_*`` variables of the try, for the command to read."""
    ti, task = context.get("ti"), context.get("task")
    logical_date = context.get("logical_date")
    found = {
        "AIRFLOW_CTX_DAG_ID": getattr(ti, "dag_id", None),
        "AIRFLOW_CTX_TASK_ID": getattr(ti, "task_id", None),
        "AIRFLOW_CTX_DAG_RUN_ID": context.get("run_id"),
        "AIRFLOW_CTX_TRY_NUMBER": str(getattr(ti, "try_number", "") or "") or None,
        "AIRFLOW_CTX_LOGICAL_DATE": logical_date.isoformat() if logical_date else None,
        "AIRFLOW_CTX_DAG_OWNER": getattr(getattr(task, "options", None), "owner", None),
    }
    return {name: value for name, value in found.items() if value}


def skip_codes(value: int | Collection[int] | None) -> tuple[int, ...]:
    if value is None:
        return ()
    codes = (value,) if isinstance(value, int) else tuple(value)
    if not all(isinstance(code, int) and not isinstance(code, bool) for code in codes):
        raise DagDefinitionError(f"skip_on_exit_code must be exit codes (ints), got {value!r}")
    return codes


def run_bash(
    command: Any, options: BashOptions, where: str, context: Mapping[str, Any] | None = None
) -> str | None:
    """Run ``command``, in ``cwd`` or (as in Airflow) a fresh temporary folder; the last line
    of its stdout (None when it printed nothing)."""
    if not isinstance(command, str) or not command.strip():
        raise TypeError(f"{where}: the bash command must be a non-empty string, got {command!r}")
    if options.cwd is not None and not os.path.isdir(options.cwd):
        raise FileNotFoundError(f"{where}: cwd {options.cwd!r} is not a folder")
    print(f"running bash command: {command}", flush=True)
    env = options.environment(context_vars(context or {}))
    with contextlib.ExitStack() as stack:
        cwd = options.cwd or stack.enter_context(tempfile.TemporaryDirectory(prefix="tradewind"))
        code, last = _run(command, env, cwd, options.output_encoding)
    if code in options.skip_on_exit_code:
        raise SkipTask(f"{where}: bash command exited {code}: task skipped")
    if code != 0:
        raise BashCommandFailed(f"{where}: bash command failed with exit code {code}")
    return last


def _run(command: str, env: dict[str, str], cwd: str, encoding: str) -> tuple[int, str | None]:
    last = None
    with subprocess.Popen(
        ["bash", "-c", command], stdout=subprocess.PIPE, env=env, cwd=cwd
    ) as child:
        assert child.stdout is not None
        for raw in child.stdout:
            line = raw.decode(encoding, errors="backslashreplace").rstrip("\n")
            sys.stdout.write(line + "\n")
            last = line
        sys.stdout.flush()
        return child.wait(), last


def bash(
    python_callable: Callable[..., Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    append_env: bool = False,
    cwd: str | None = None,
    skip_on_exit_code: int | Collection[int] | None = SKIP_EXIT_CODE,
    output_encoding: str = "utf-8",
    output_processor: Callable[[Any], Any] | None = None,
    **options: Any,
) -> Any:
    """``@task.bash``: the function returns the command to run; ``output_processor`` turns
    its last line into the task's result."""
    parsed = task_options("@task.bash", options)
    how = BashOptions(env, append_env, cwd, skip_codes(skip_on_exit_code), output_encoding)
    process = check_processor("@task.bash", output_processor)

    def decorate(function: Callable[..., Any]) -> TaskDecorator:
        return BashDecorator(function, how, process, parsed, options)

    return decorate(python_callable) if python_callable is not None else decorate


#: What ``.override()`` of a ``@task.bash`` may change besides the task options.
_BASH_FIELDS = frozenset({"env", "append_env", "cwd", "skip_on_exit_code", "output_encoding"})


class BashDecorator(TaskDecorator):
    """A ``@task.bash`` function: ``.override(env=..., cwd=...)`` changes how it runs too."""

    def __init__(
        self,
        command: Callable[..., Any],
        how: BashOptions,
        process: Callable[[Any], Any],
        options: Any,
        explicit: Any,
    ) -> None:
        super().__init__(_running(command, how, process), options, explicit)
        self.command, self.how, self.process = command, how, process

    def _add_task(self, args: tuple[Any, ...], kwargs: dict[str, Any], mapping: Any = None) -> Any:
        added = super()._add_task(args, kwargs, mapping)
        for upstream in find_xcom_args(self.how.env):  # a result in env: run after its task
            added.set_upstream(upstream.task)
        return added

    def override(self, **changes: Any) -> TaskDecorator:
        ours = {k: changes.pop(k) for k in list(changes) if k in _BASH_FIELDS}
        if "skip_on_exit_code" in ours:
            ours["skip_on_exit_code"] = skip_codes(ours["skip_on_exit_code"])
        process = check_processor("@task.bash", changes.pop("output_processor", self.process))
        plain = super().override(**changes)
        how = replace(self.how, **ours)
        return BashDecorator(self.command, how, process, plain.options, plain.explicit)


def check_processor(where: str, processor: Any) -> Callable[[Any], Any]:
    """``output_processor``, or the identity Airflow defaults to."""
    if processor is None:
        return _same
    if not callable(processor):
        raise DagDefinitionError(f"{where}: output_processor must be callable, got {processor!r}")
    return processor  # type: ignore[no-any-return]


def _same(output: Any) -> Any:
    return output


def _running(
    function: Callable[..., Any], how: BashOptions, process: Callable[[Any], Any]
) -> Callable[..., Any]:
    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        context = get_current_context()
        task = context["task"]
        command = task.render_template(function(*args, **kwargs), context)
        # env is templated, as in Airflow: upstream results in it are read now.
        ran = replace(how, env=task.render_template(how.env, context)) if how.env else how
        return process(run_bash(command, ran, f"task {task.task_id}", context))

    return run
