"""``@task.bash`` and ``BashOperator``: a task whose work is a bash command, as in Airflow 3.

The decorated function returns the command (rendered with Jinja like any templated field); the
task process runs it with ``bash -c`` as its child, in its process group, so the supervisor's
SIGTERM and SIGKILL (timeout, a cleared try) reach the command too. The command's stdout is
copied line by line to the task's stdout and its stderr goes straight to the task's: both land
in the try's log. The last line of stdout is the task's XCom. Exit code ``skip_on_exit_code``
(99 unless told) skips the task; any other non-zero exit fails it with one line naming the code.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from tradewind.context import get_current_context
from tradewind.exceptions import DagDefinitionError, SkipTask
from tradewind.task import TaskDecorator, task_options

SKIP_EXIT_CODE = 99


class BashCommandFailed(RuntimeError):
    """The command exited non-zero (and not with a skip code): the try fails, retries apply."""


@dataclass(frozen=True)
class BashOptions:
    """How a bash command runs: its environment, folder, and the exit codes that skip."""

    env: Mapping[str, str] | None = None
    append_env: bool = False
    cwd: str | None = None
    skip_on_exit_code: Collection[int] = (SKIP_EXIT_CODE,)

    def environment(self) -> dict[str, str] | None:
        """``env`` alone (as in Airflow), or over the worker's own with ``append_env``."""
        if self.env is None:
            return None
        given = {str(key): str(value) for key, value in self.env.items()}
        return {**os.environ, **given} if self.append_env else given


def skip_codes(value: int | Collection[int] | None) -> tuple[int, ...]:
    if value is None:
        return ()
    codes = (value,) if isinstance(value, int) else tuple(value)
    if not all(isinstance(code, int) and not isinstance(code, bool) for code in codes):
        raise DagDefinitionError(f"skip_on_exit_code must be exit codes (ints), got {value!r}")
    return codes


def run_bash(command: Any, options: BashOptions, where: str) -> str | None:
    """Run ``command``; the last line of its stdout (None when it printed nothing)."""
    if not isinstance(command, str) or not command.strip():
        raise TypeError(f"{where}: the bash command must be a non-empty string, got {command!r}")
    if options.cwd is not None and not os.path.isdir(options.cwd):
        raise FileNotFoundError(f"{where}: cwd {options.cwd!r} is not a folder")
    print(f"running bash command: {command}", flush=True)
    last = None
    with subprocess.Popen(
        ["bash", "-c", command],
        stdout=subprocess.PIPE,
        env=options.environment(),
        cwd=options.cwd,
    ) as child:
        assert child.stdout is not None
        for raw in child.stdout:
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            sys.stdout.write(line + "\n")
            last = line
        sys.stdout.flush()
        code = child.wait()
    if code in options.skip_on_exit_code:
        raise SkipTask(f"{where}: bash command exited {code}: task skipped")
    if code != 0:
        raise BashCommandFailed(f"{where}: bash command failed with exit code {code}")
    return last


def bash(
    python_callable: Callable[..., Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    append_env: bool = False,
    cwd: str | None = None,
    skip_on_exit_code: int | Collection[int] | None = SKIP_EXIT_CODE,
    **options: Any,
) -> Any:
    """``@task.bash``: the function returns the command to run."""
    parsed = task_options("@task.bash", options)
    how = BashOptions(env, append_env, cwd, skip_codes(skip_on_exit_code))

    def decorate(function: Callable[..., Any]) -> TaskDecorator:
        return TaskDecorator(_running(function, how), parsed, options)

    return decorate(python_callable) if python_callable is not None else decorate


def _running(function: Callable[..., Any], how: BashOptions) -> Callable[..., Any]:
    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> str | None:
        context = get_current_context()
        task = context["task"]
        command = task.render_template(function(*args, **kwargs), context)
        return run_bash(command, how, f"task {task.task_id}")

    return run
