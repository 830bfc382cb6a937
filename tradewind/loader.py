"""Finding DAGs: import every ``*.py`` file of a folder and collect the DAGs each one creates.

A file that fails to import (syntax error, exception, malformed DAG) is recorded with a one-line
error and its traceback; it never stops the other files from loading.
"""

from __future__ import annotations

import gc
import hashlib
import importlib.util
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from tradewind import dag_context
from tradewind.airflow_paths import drop_noted_modules, install
from tradewind.bytecode import compiled
from tradewind.dag import DAG, structure_hash
from tradewind.settings import Settings, get_settings
from tradewind.spellings import noting_spellings, spelling_line


class ParsedDag(NamedTuple):
    """A DAG as loaded, with the structure and version hash computed while validating it."""

    dag: DAG
    structure: dict[str, Any]
    version_hash: str


@dataclass
class DagBag:
    """The DAGs of a folder, by id, and the import errors, by file.

    ``parsed`` holds each DAG's structure and version hash as the load computed them, so that
    storing the DAGs (``scheduler/dag_sync.py``) does not build each structure again.
    """

    folder: Path
    dags: dict[str, DAG] = field(default_factory=dict)
    import_errors: dict[str, tuple[str, str]] = field(default_factory=dict)
    parsed: dict[str, ParsedDag] = field(default_factory=dict)
    #: Per file that used Airflow 2 spellings: each, with Airflow 3's (``spelling_line``).
    spellings: dict[str, list[str]] = field(default_factory=dict)

    def warning_line(self, path: str) -> str | None:
        """The one warning line of the file at ``path``, if it used Airflow 2 spellings."""
        notes = self.spellings.get(path)
        return spelling_line(notes) if notes else None

    @classmethod
    def collect(cls, folder: Path) -> DagBag:
        bag = cls(folder)
        importable(folder)
        with collector_paused():  # one collection after the folder, not one per file
            for path in sorted(dag_files(folder)):
                bag.add_file(path)
        return bag

    def add_file(self, path: Path) -> None:
        try:
            with noting_spellings() as notes:
                found = load_parsed_dags(path)
            clash = [p.dag.dag_id for p in found if p.dag.dag_id in self.dags]
            if clash:
                other = self.dags[clash[0]].fileloc
                raise ValueError(f"DAG id {clash[0]!r} is already defined in {other}")
        except (Exception, SystemExit) as error:
            self.import_errors[str(path)] = (one_line_error(error), traceback.format_exc())
            return
        finally:
            if notes:
                self.spellings[str(path)] = notes
        for parsed in found:
            self.dags[parsed.dag.dag_id] = parsed.dag
            self.parsed[parsed.dag.dag_id] = parsed


def importable(folder: Path) -> None:
    """Put a DAGs folder on ``sys.path``, as Airflow does: DAG files import their own modules
    (``from common.helpers import ...``) from the folder's root."""
    entry = str(folder.resolve())
    if entry not in sys.path:
        sys.path.append(entry)


def dag_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return [
        path
        for path in folder.rglob("*.py")
        if not any(part.startswith(("_", ".")) for part in path.relative_to(folder).parts)
    ]


def one_line_error(error: BaseException) -> str:
    if isinstance(error, SyntaxError):
        return f"SyntaxError: {error.msg} ({Path(error.filename or '?').name}, line {error.lineno})"
    text = str(error).strip().splitlines()
    line = f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")
    missing = getattr(error, "name", None) or ""
    if isinstance(error, ModuleNotFoundError) and missing.split(".")[0] == "airflow":
        line += " (not one of the Airflow paths Tradewind has: see `tradewind dags check`)"
    return line


def load_dag_file(path: Path) -> list[DAG]:
    """Import ``path`` as a fresh module; return the DAGs it built, validated."""
    return [parsed.dag for parsed in load_parsed_dags(path)]


def load_parsed_dags(path: Path) -> list[ParsedDag]:
    """``load_dag_file``, each DAG with its structure and version hash.

    The file's ``airflow.*`` imports resolve to Tradewind's names (``tradewind/airflow_paths``),
    unless ``TRADEWIND_AIRFLOW_IMPORTS=airflow``. The cyclic garbage collector waits while a file
    builds its DAGs (thousands of objects, nearly all kept): it runs once after, not every few
    hundred allocations (a quarter of a classic folder's parse time).
    """
    with collector_paused():
        return _load_parsed_dags(path)


def _load_parsed_dags(path: Path) -> list[ParsedDag]:
    settings = get_settings()
    install(settings.airflow_imports)
    importable(settings.resolved_dags_folder)
    path = path.resolve()
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:12]
    module_name = f"tradewind_dags_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    start = len(dag_context.CREATED)
    sys.modules[module_name] = module
    try:
        # Not through __pycache__, which trusts a pyc on mtime and size: keyed on the content.
        exec(compiled(path, path.read_bytes(), _bytecode_cache(settings)), module.__dict__)
    except BaseException:
        del sys.modules[module_name]
        raise
    finally:
        created = dag_context.CREATED[start:]
        del dag_context.CREATED[start:]
        drop_noted_modules()
    found: dict[str, ParsedDag] = {}
    for built in created:
        order = built.validate()
        built.fileloc = str(path)
        structure = built.structure(order)
        # A structure JSON cannot hold fails here, not in the scheduler.
        found[built.dag_id] = ParsedDag(built, structure, structure_hash(structure))
    return list(found.values())


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off inside, on again after if it was on before."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _bytecode_cache(settings: Settings) -> Path | None:
    """Where compiled DAG files are kept: under ``TRADEWIND_HOME`` once it exists (a command
    run in a folder without one leaves nothing behind)."""
    home = settings.resolved_home
    return home / "cache" / "dag-bytecode" if home.is_dir() else None
