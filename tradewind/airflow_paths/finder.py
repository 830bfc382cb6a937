"""The import finder behind ``airflow.*`` in Tradewind's processes.

Each ``airflow.*`` module is a small module object built from a table row: its names resolve on
first use (``module.__getattr__``) to Tradewind's objects, so importing ``airflow.sdk`` costs a
dictionary lookup, not Tradewind's whole authoring API. A module or name that Airflow 2 spelled
differently warns with ``Airflow2Spelling`` (the loader gathers those per file); a name Airflow
has and Tradewind lacks fails with one line naming it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import logging
import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any, overload

from tradewind.airflow_paths.names import AIRFLOW_VERSION, ModuleRow, row_of
from tradewind.settings import get_settings
from tradewind.spellings import airflow2_spelling
from tradewind.unsupported import missing_airflow_name

log = logging.getLogger("tradewind.airflow_paths")

#: Airflow's distributions: when one is installed, ``install`` says what Tradewind does.
AIRFLOW_DISTRIBUTIONS = ("apache-airflow-core", "apache-airflow")
_CHOICE = "TRADEWIND_AIRFLOW_IMPORTS"
#: The Airflow 2 modules built since the loader last dropped them.
_NOTED: set[str] = set()


class AirflowPathsFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``airflow`` and the modules below it that ``names.py`` lists."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        row = row_of(fullname)
        if row is None or _installed_provider_module(fullname, path):
            return None
        spec = importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        spec.submodule_search_locations = _package_path(fullname)  # type: ignore[assignment]
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None  # the default module object

    def exec_module(self, module: types.ModuleType) -> None:
        row = row_of(module.__name__)
        assert row is not None
        if row.airflow3 is not None:
            airflow2_spelling(module.__name__, row.airflow3)
        module.__getattr__ = _resolver(module.__name__, row)  # type: ignore[method-assign]
        module.__all__ = sorted(row.names)  # type: ignore[attr-defined]
        module.__doc__ = f"Airflow's {module.__name__}, with Tradewind's names."
        if module.__name__ == "airflow":
            module.__version__ = AIRFLOW_VERSION  # type: ignore[attr-defined]
        if row.airflow3 is not None:
            _NOTED.add(module.__name__)


def _installed_provider_module(fullname: str, path: Sequence[str] | None) -> bool:
    """Whether ``fullname`` is a module of an installed provider, which then serves it itself.

    A row below ``airflow.providers`` (``...common.compat.sdk``, ``...smtp.operators.smtp``)
    stands in for a provider that is not installed; the standard provider is always Tradewind's.
    """
    if not fullname.startswith("airflow.providers.") or fullname.startswith(_STANDARD):
        return False
    if path is None:
        return False
    return importlib.machinery.PathFinder.find_spec(fullname, path) is not None


_STANDARD = "airflow.providers.standard"


class _DagsFolderPath(Sequence[str]):
    """The ``__path__`` of ``airflow.example_dags``: the DAGs folder of the settings in force.

    Read at each import, as a namespace package's path is: a process whose settings name another
    DAGs folder (the CLI, tests) finds the helpers of that folder, not of the first one.
    """

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return [str(get_settings().resolved_dags_folder)][index]

    def __len__(self) -> int:
        return 1

    def __repr__(self) -> str:
        return f"_DagsFolderPath({list(self)!r})"


def _package_path(fullname: str) -> Sequence[str]:
    """Where modules below ``fullname`` are also searched: installed providers, under theirs.

    Airflow's example DAGs import their helpers as ``airflow.example_dags.libs...``: with the
    examples as the DAGs folder, that package is the DAGs folder.
    """
    if fullname == "airflow.example_dags":
        return _DagsFolderPath()
    if fullname != "airflow.providers" and not fullname.startswith("airflow.providers."):
        return []
    parts = fullname.split(".")
    found = []
    for entry in sys.path:
        folder = Path(entry or ".", *parts)
        if folder.is_dir():
            found.append(str(folder))
    return found


def _resolver(module_name: str, row: ModuleRow) -> Any:
    def resolve(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        target = row.names.get(name)
        if target is None and row.delegate is not None:
            return _delegated(row.delegate, name, module_name)
        if target is None:
            return _submodule(module_name, name)
        value = _load(target, name, module_name)
        if target.airflow3 is not None:
            airflow2_spelling(f"{name} (from {module_name})", target.airflow3)
        else:  # kept: the next lookup skips __getattr__
            setattr(sys.modules.get(module_name), name, value)
        return value

    return resolve


def _delegated(delegate: str, name: str, module_name: str) -> Any:
    try:
        return getattr(importlib.import_module(delegate), name)
    except AttributeError:
        raise missing_airflow_name(name, module_name) from None


def _submodule(module_name: str, name: str) -> types.ModuleType:
    """``from airflow.x import y`` where ``y`` is a module below ``airflow.x``, else the error
    naming ``y``."""
    try:
        return importlib.import_module(f"{module_name}.{name}")
    except ModuleNotFoundError:
        raise missing_airflow_name(name, module_name) from None


def _load(target: Any, name: str, module_name: str) -> Any:
    module_path, _, attribute = target.path.partition(":")
    try:
        module = importlib.import_module(module_path)
    except ModuleNotFoundError as error:
        if not (error.name or "").startswith("tradewind"):
            raise
        raise missing_airflow_name(name, module_name) from None
    return getattr(module, attribute) if attribute else module


def airflow_installed() -> str | None:
    """The version of Airflow installed beside Tradewind, if any."""
    for distribution in AIRFLOW_DISTRIBUTIONS:
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def installed_finder() -> AirflowPathsFinder | None:
    return next((f for f in sys.meta_path if isinstance(f, AirflowPathsFinder)), None)


def install(choice: str = "tradewind") -> bool:
    """Resolve ``airflow.*`` to Tradewind's names in this process; False if left to Airflow.

    ``choice`` is ``TRADEWIND_AIRFLOW_IMPORTS``: ``tradewind`` (the default) or ``airflow``.
    """
    if installed_finder() is not None:
        return True
    version = airflow_installed()
    if choice == "airflow":
        return False
    loaded = sys.modules.get("airflow")
    if loaded is not None and not isinstance(
        getattr(loaded, "__loader__", None), AirflowPathsFinder
    ):
        log.warning(
            "airflow is already imported from %s in this process: DAG files get that one, "
            "not Tradewind's names",
            getattr(loaded, "__file__", "?"),
        )
        return False
    if version is not None:
        log.warning(
            "apache-airflow %s is installed: in Tradewind's processes, DAG files' airflow.* "
            "imports resolve to Tradewind's names (set %s=airflow to import Airflow's own)",
            version,
            _CHOICE,
        )
    sys.meta_path.insert(0, AirflowPathsFinder())
    return True


def drop_noted_modules() -> None:
    """Forget the Airflow 2 modules imported so far, so that the next DAG file's imports of them
    warn again (its own report names them)."""
    while _NOTED:
        sys.modules.pop(_NOTED.pop(), None)
