"""``@task.virtualenv``: the function runs in a virtualenv made for its requirements, as in Airflow.

Each set of requirements (with the Python version and ``system_site_packages``) gets one venv,
``TRADEWIND_HOME/venvs/<hash>``, made the first time a task needs it and reused after: made
under a file lock, so two workers (or two slots of one) never build the same one at once, and
marked ready only once pip has finished, so a venv half-built by a killed worker is built again.
The function's source (as Airflow requires, self-contained: its imports inside it) runs in a
fresh interpreter of that venv, a child of the task process whose stdout and stderr are the
task's (the try's log). Its arguments and return value travel as JSON. A virtualenv task always
gets a fresh task process, never a reused one (docs/decisions/warm-task-processes.md).
"""

from __future__ import annotations

import ast
import fcntl
import functools
import hashlib
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tradewind.bash import skip_codes
from tradewind.context import get_current_context
from tradewind.exceptions import DagDefinitionError, SkipTask
from tradewind.task import TaskDecorator, task_options

#: Airflow's serializers: accepted, but values always travel as JSON here.
SERIALIZERS = frozenset({"json", "pickle", "dill", "cloudpickle"})
_READY = ".tradewind-ready"
#: Marks a task body that must run in a fresh task process (worker/supervisor/execute.py).
FRESH_PROCESS = "tradewind_fresh_process"


class VirtualenvError(RuntimeError):
    """The venv could not be made, or the function failed inside it."""


@dataclass(frozen=True)
class VenvSpec:
    """What a venv is made of: its key is the hash of all three."""

    requirements: tuple[str, ...]
    python_version: str | None
    system_site_packages: bool
    pip_install_options: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        described = json.dumps(
            [
                sorted(self.requirements),
                self.python_version,
                self.system_site_packages,
                list(self.pip_install_options),
            ]
        )
        return hashlib.sha256(described.encode()).hexdigest()[:16]

    def interpreter(self) -> str:
        """The Python the venv is made from: the worker's, or ``python<version>`` on PATH."""
        if self.python_version is None:
            return sys.executable
        found = shutil.which(f"python{self.python_version}")
        if found is None:
            raise VirtualenvError(
                f"python_version {self.python_version!r}: no python{self.python_version} on PATH"
            )
        return found


def venv_spec(
    requirements: Any, python_version: Any, system_site: Any, pip_options: Any
) -> VenvSpec:
    if isinstance(requirements, str):
        requirements = [requirements]
    if not isinstance(requirements, list | tuple) or not all(
        isinstance(r, str) for r in requirements
    ):
        raise DagDefinitionError(
            f"@task.virtualenv: requirements must be a list of strings, got {requirements!r}"
        )
    if python_version is not None:
        python_version = str(python_version)
    return VenvSpec(
        tuple(requirements), python_version, bool(system_site), tuple(pip_options or ())
    )


def virtualenv(
    python_callable: Callable[..., Any] | None = None,
    *,
    requirements: Any = None,
    python_version: Any = None,
    system_site_packages: bool = True,
    serializer: str = "json",
    pip_install_options: Sequence[str] | None = None,
    index_urls: str | Sequence[str] | None = None,
    venv_cache_path: str | os.PathLike[str] | None = None,
    skip_on_exit_code: int | Sequence[int] | None = None,
    env_vars: dict[str, str] | None = None,
    inherit_env: bool = True,
    expect_airflow: bool = True,  # Tradewind never needs Airflow in the venv: nothing to check
    **options: Any,
) -> Any:
    """``@task.virtualenv(requirements=[...], python_version=..., system_site_packages=...)``,
    with the standard provider's ``index_urls``, ``venv_cache_path``, ``skip_on_exit_code``,
    ``env_vars`` and ``inherit_env``."""
    if serializer not in SERIALIZERS:
        raise DagDefinitionError(
            f"@task.virtualenv: serializer must be one of {sorted(SERIALIZERS)}, got {serializer!r}"
        )
    parsed = task_options("@task.virtualenv", options)
    pip_options = [*(pip_install_options or ()), *index_options(index_urls)]
    spec = venv_spec(requirements or [], python_version, system_site_packages, pip_options)
    folder = Path(venv_cache_path) if venv_cache_path else None
    how = venv_call(skip_on_exit_code, env_vars, inherit_env)

    def decorate(function: Callable[..., Any]) -> TaskDecorator:
        return TaskDecorator(_in_venv(function, spec, folder, how), parsed, options)

    return decorate(python_callable) if python_callable is not None else decorate


def index_options(index_urls: str | Sequence[str] | None) -> list[str]:
    """pip's options for Airflow's ``index_urls``: the first is the index, the rest extra."""
    urls = [index_urls] if isinstance(index_urls, str) else list(index_urls or ())
    options = ["--index-url", urls[0]] if urls else []
    for url in urls[1:]:
        options += ["--extra-index-url", url]
    return options


def venv_call(skip_on_exit_code: Any, env_vars: Any, inherit_env: bool) -> VenvCall:
    """How the interpreter runs: ``env_vars`` over the task's environment (``inherit_env``)."""
    env = {**(os.environ if inherit_env else {}), **(env_vars or {})}
    return VenvCall(env=env, skip_on_exit_code=skip_codes(skip_on_exit_code))


def _in_venv(
    function: Callable[..., Any], spec: VenvSpec, folder: Path | None, how: VenvCall
) -> Callable[..., Any]:
    source = function_source(function)

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        context = get_current_context()
        where = f"task {context['ti'].task_id}"
        # The context stays here (a ``ti`` is no JSON): only the task's own arguments travel.
        given = {k: v for k, v in kwargs.items() if not (k in context and v is context[k])}
        python = ensure_venv(folder or venvs_folder(), spec)
        return call_in_venv(python, source, function.__name__, args, given, where, how)

    setattr(run, FRESH_PROCESS, True)
    return run


def needs_fresh_process(task: Any) -> bool:
    """Whether ``task`` must run in a task process of its own (a virtualenv task)."""
    return bool(getattr(task.python_callable, FRESH_PROCESS, False))


def function_source(function: Callable[..., Any]) -> str:
    """The function's own source, without its decorators, dedented."""
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError) as error:
        raise DagDefinitionError(
            f"@task.virtualenv {function.__name__}: its source cannot be read ({error})"
        ) from None
    tree = ast.parse(source)
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))
    lines = source.splitlines()[node.lineno - 1 :]
    return "\n".join(lines) + "\n"


def venvs_folder() -> Path:
    from tradewind.settings import get_settings

    return get_settings().resolved_home / "venvs"


def ensure_venv(folder: Path, spec: VenvSpec) -> Path:
    """The venv's python, made once under a lock; a venv already ready is reused as it is."""
    venv = folder / spec.key
    python = venv / "bin" / "python"
    if (venv / _READY).is_file():
        return python
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{spec.key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker building it: wait, then reuse it
        if not (venv / _READY).is_file():
            _build(venv, spec)
    return python


def _build(venv: Path, spec: VenvSpec) -> None:
    if venv.exists():  # left half-built by a worker that died
        shutil.rmtree(venv)
    command = [spec.interpreter(), "-m", "venv", str(venv)]
    if not spec.requirements:  # nothing to install: a venv without pip is made in a fraction
        command.append("--without-pip")
    if spec.system_site_packages:
        command.append("--system-site-packages")
    print(f"making virtualenv {venv} for {list(spec.requirements)}", flush=True)
    _check(command, "making the virtualenv")
    if spec.requirements:
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
        _check([*pip, *spec.pip_install_options, *spec.requirements], "installing requirements")
    (venv / _READY).write_text("\n".join(spec.requirements) + "\n")


def _check(command: list[str], what: str) -> None:
    sys.stdout.flush()
    code = subprocess.call(command)
    if code != 0:
        raise VirtualenvError(f"{what} failed (exit code {code}): {' '.join(command)}")


@dataclass(frozen=True)
class VenvCall:
    """How the interpreter runs: its environment (None: the task's) and the exit codes that skip
    the task (``PythonVirtualenvOperator``'s ``skip_on_exit_code``)."""

    env: dict[str, str] | None = None
    skip_on_exit_code: tuple[int, ...] = ()


_RUNNER = """
import json, sys, traceback
with open(sys.argv[1]) as given:
    call = json.load(given)
try:
    result = {name}(*call["args"], **call["kwargs"])
    with open(sys.argv[2], "w") as out:
        json.dump(result, out)
except SystemExit:
    raise
except BaseException as error:
    traceback.print_exc()
    with open(sys.argv[3], "w") as out:
        out.write(f"{{type(error).__name__}}: {{error}}")
    sys.exit(1)
"""


def call_in_venv(
    python: Path,
    source: str,
    name: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    where: str,
    how: VenvCall | None = None,
) -> Any:
    """Run ``name`` of ``source`` in ``python`` with the arguments; its JSON return value."""
    how = how or VenvCall()
    try:
        given = json.dumps({"args": list(args), "kwargs": kwargs})
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"{where}: the arguments of a virtualenv task must be JSON: {error}"
        ) from None
    with tempfile.TemporaryDirectory(prefix="tradewind-venv-call-") as folder:
        paths = [
            os.path.join(folder, f) for f in ("script.py", "args.json", "result.json", "error")
        ]
        # As Airflow's script: annotations naming what the source does not import stay text.
        script = "from __future__ import annotations\n" + source + _RUNNER.format(name=name)
        Path(paths[0]).write_text(script)
        Path(paths[1]).write_text(given)
        sys.stdout.flush()
        sys.stderr.flush()
        code = subprocess.call([str(python), *paths], cwd=folder, env=how.env)
        if code in how.skip_on_exit_code:
            raise SkipTask(f"{where}: its virtualenv process exited {code}: task skipped")
        if code != 0:
            said = Path(paths[3]).read_text() if os.path.exists(paths[3]) else f"exit code {code}"
            raise VirtualenvError(f"{where}: failed in its virtualenv: {said}")
        if not os.path.exists(paths[2]):
            return None
        return json.loads(Path(paths[2]).read_text())
