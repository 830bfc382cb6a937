"""Building a stored trigger in the triggerer: its class imported as the worker imports DAGs.

A class in an installed module (Tradewind's own, a provider's) or in a module under the DAGs
folder (which is on ``sys.path``, as for DAG files) imports by its path. A class defined in a
DAG file itself has the module name the DAG loader gives that file
(``tradewind_dags_<stem>_<digest of its path>``, ``tradewind/loader.py``): the file is found in
the DAGs folder by that name and loaded as the worker loads it, once.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from pathlib import Path
from typing import Any

from tradewind.airflow_paths import install
from tradewind.loader import dag_files, importable, load_dag_file
from tradewind.settings import Settings
from tradewind.triggers.base import BaseTrigger, TriggerUnavailable, build_trigger

_DAG_MODULE = "tradewind_dags_"
_LOADING = threading.Lock()


class TriggerClasses:
    """Builds triggers from their stored ``(classpath, kwargs)``."""

    def __init__(self, settings: Settings) -> None:
        self.folder = Path(settings.resolved_dags_folder)
        # DAG modules whose file has been loaded whole: one is in sys.modules from the start of
        # its load, before its classes are defined, so sys.modules cannot tell.
        self.loaded: set[str] = set()
        install(settings.airflow_imports)
        importable(self.folder)

    def ready(self, classpath: str) -> bool:
        """Whether the class's module is loaded whole: building it costs no import."""
        module = classpath.rpartition(".")[0]
        return module in self.loaded or (
            not module.startswith(_DAG_MODULE) and module in sys.modules
        )

    def build(self, classpath: str, kwargs: dict[str, Any]) -> BaseTrigger:
        module = classpath.rpartition(".")[0]
        if module.startswith(_DAG_MODULE) and module not in self.loaded:
            self._load_dag_module(module)
        return build_trigger(classpath, kwargs)

    def _load_dag_module(self, module: str) -> None:
        with _LOADING:  # a second trigger of the same file waits for the first's load
            if module in self.loaded:
                return
            for path in dag_files(self.folder):
                resolved = path.resolve()
                digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:12]
                if module == f"{_DAG_MODULE}{resolved.stem}_{digest}":
                    try:
                        load_dag_file(resolved)
                        self.loaded.add(module)
                    except Exception as error:
                        raise TriggerUnavailable(
                            f"DAG file {resolved} (module {module}) does not import: "
                            f"{type(error).__name__}: {error}"
                        ) from None
                    return
        raise TriggerUnavailable(f"no DAG file in {self.folder} is the module {module}")
