"""``PythonVirtualenvOperator`` and ``ExternalPythonOperator`` (and their branch forms): the
callable runs in another interpreter, as the standard provider's do.

Built on ``tradewind/virtualenv.py`` (what ``@task.virtualenv`` runs): the venv made once per
set of requirements and reused (under ``venv_cache_path`` when given), or for
``ExternalPythonOperator`` the ``python`` given, used as it is. The function's source runs
there; ``op_args``, ``op_kwargs`` and the context keys that are plain strings (``ds``, ``ts``,
``run_id``..., and ``templates_dict``) travel as JSON whatever ``serializer`` says, and so does
the result. ``string_args`` are the global ``virtualenv_string_args``; ``env_vars`` and
``inherit_env`` make its environment; an exit code of ``skip_on_exit_code`` skips the task.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from tradewind.bash import skip_codes
from tradewind.exceptions import DagDefinitionError
from tradewind.standard.branch import ChoosingOperator
from tradewind.standard.python import PythonOperator, determine_kwargs
from tradewind.virtualenv import (
    FRESH_PROCESS,
    SERIALIZERS,
    call_in_venv,
    ensure_venv,
    function_source,
    index_options,
    venv_call,
    venv_spec,
    venvs_folder,
)

#: The context keys that cross into the other interpreter: strings, as JSON carries them.
SERIALIZABLE_KEYS = frozenset(
    {"ds", "ds_nodash", "ts", "ts_nodash", "ts_nodash_with_tz", "run_id", "partition_key"}
)


class _InterpreterOperator(PythonOperator):
    """What both take: the callable runs in another Python, given JSON, answering JSON."""

    def __init__(
        self,
        *,
        serializer: str | None = None,
        string_args: Sequence[str] | None = None,
        expect_airflow: bool = True,
        skip_on_exit_code: int | Sequence[int] | None = None,
        env_vars: Mapping[str, str] | None = None,
        inherit_env: bool = True,
        **kwargs: Any,
    ) -> None:
        name = f"{type(self).__name__} {kwargs.get('task_id', '')}".strip()
        if serializer is not None and serializer not in SERIALIZERS:
            raise DagDefinitionError(
                f"{name}: serializer must be one of {sorted(SERIALIZERS)}, got {serializer!r}"
            )
        self.serializer = serializer or "pickle"
        self.string_args = [str(arg) for arg in string_args or ()]
        # Tradewind never needs Airflow in the other interpreter: nothing to check there.
        self.expect_airflow = expect_airflow
        self.skip_on_exit_code = skip_codes(skip_on_exit_code)  # checked at load
        self.env_vars = dict(env_vars or {})
        self.inherit_env = bool(inherit_env)
        super().__init__(**kwargs)
        self._source = function_source(self.python_callable)

    def _join_dag(self) -> None:
        super()._join_dag()
        # A fresh task process, as for @task.virtualenv (docs/decisions/warm-task-processes.md).
        setattr(self.task.python_callable, FRESH_PROCESS, True)

    def interpreter(self) -> Path:
        raise NotImplementedError

    def execute(self, context: dict[str, Any]) -> Any:
        plain = {key: context[key] for key in SERIALIZABLE_KEYS if key in context}
        plain.update(self.op_kwargs)
        if self.templates_dict is not None:
            plain["templates_dict"] = self.templates_dict
        keywords = determine_kwargs(self.python_callable, self.op_args, plain)
        result = self.execute_callable(keywords)
        print(
            f"Done. Returned value was: {result!r}"
            if self.show_return_value_in_logs
            else "Done. Returned value not shown",
            flush=True,
        )
        return result

    def execute_callable(self, keywords: Mapping[str, Any]) -> Any:
        strings = f"virtualenv_string_args = {json.dumps(self.string_args)}\n"
        how = venv_call(self.skip_on_exit_code, self.env_vars, self.inherit_env)
        name = self.python_callable.__name__
        where = f"task {self.task_id}"
        return call_in_venv(
            self.interpreter(),
            strings + self._source,
            name,
            tuple(self.op_args),
            dict(keywords),
            where,
            how,
        )


class PythonVirtualenvOperator(_InterpreterOperator):
    """The callable runs in a virtualenv made for ``requirements`` (and reused after)."""

    template_fields: ClassVar[Sequence[str]] = (
        "requirements",
        "templates_dict",
        "op_args",
        "op_kwargs",
    )
    template_ext: ClassVar[Sequence[str]] = (".txt",)  # a requirements file

    def __init__(
        self,
        *,
        requirements: str | Sequence[str] | None = None,
        python_version: str | None = None,
        system_site_packages: bool = True,
        pip_install_options: Sequence[str] | None = None,
        index_urls: str | Sequence[str] | None = None,
        venv_cache_path: str | os.PathLike[str] | None = None,
        **kwargs: Any,
    ) -> None:
        if kwargs.get("index_urls_from_connection_ids"):
            raise DagDefinitionError(
                f"{type(self).__name__} {kwargs.get('task_id', '')}: "
                "index_urls_from_connection_ids is not supported yet; give index_urls"
            )
        kwargs.pop("index_urls_from_connection_ids", None)
        self.requirements = (
            [requirements] if isinstance(requirements, str) else list(requirements or ())
        )
        self.python_version = python_version
        self.system_site_packages = system_site_packages
        self.pip_install_options = [*(pip_install_options or ()), *index_options(index_urls)]
        self.venv_cache_path = venv_cache_path
        super().__init__(**kwargs)

    def interpreter(self) -> Path:
        spec = venv_spec(
            _requirement_lines(self.requirements),
            self.python_version,
            self.system_site_packages,
            self.pip_install_options,
        )
        folder = Path(self.venv_cache_path) if self.venv_cache_path else venvs_folder()
        return ensure_venv(folder, spec)


def _requirement_lines(requirements: list[str]) -> list[str]:
    """A requirements file rendered (``requirements.txt``) gives one requirement a line."""
    lines = (line.split("#", 1)[0].strip() for text in requirements for line in text.splitlines())
    return [line for line in lines if line]


class ExternalPythonOperator(_InterpreterOperator):
    """The callable runs with the ``python`` given (a venv's ``bin/python``), used as it is."""

    template_fields: ClassVar[Sequence[str]] = ("python", "templates_dict", "op_args", "op_kwargs")

    def __init__(self, *, python: str, expect_pendulum: bool = False, **kwargs: Any) -> None:
        if not python or not isinstance(python, str):
            raise DagDefinitionError(
                f"{type(self).__name__} {kwargs.get('task_id', '')}: python must be the path "
                f"of a Python interpreter, got {python!r}"
            )
        self.python = python
        self.expect_pendulum = expect_pendulum
        super().__init__(**kwargs)

    def interpreter(self) -> Path:
        path = Path(self.python)
        if not path.is_file():
            raise FileNotFoundError(f"task {self.task_id}: python {self.python!r} not found")
        return path


class BranchPythonVirtualenvOperator(ChoosingOperator, PythonVirtualenvOperator):
    """``PythonVirtualenvOperator`` whose result is the task id(s) to follow."""


class BranchExternalPythonOperator(ChoosingOperator, ExternalPythonOperator):
    """``ExternalPythonOperator`` whose result is the task id(s) to follow."""
