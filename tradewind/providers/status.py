"""Which installed providers are usable on Tradewind, and why one is not.

A provider is usable when its package imports (its ``__init__`` checks the Airflow version it
sees) and so do the hooks of its connection types; ``deep`` also imports every module its
provider info lists (hooks, operators, sensors, triggers, transfers), which takes longer.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tradewind.airflow_paths import install
from tradewind.providers.compat import import_string
from tradewind.providers.registry import ProviderInfo, installed_providers

_MODULE_KINDS = ("hooks", "operators", "sensors", "triggers", "notifications")


@dataclass(frozen=True)
class ProviderStatus:
    name: str
    version: str
    usable: bool
    why: str  # what failed, or how much was checked
    checked: int  # modules and classes imported


def _modules(info: ProviderInfo, deep: bool) -> list[str]:
    package = str(info.data.get("package-name", info.package_name))
    modules = ["airflow." + package.removeprefix("apache-airflow-").replace("-", ".")]
    if deep:
        for kind in _MODULE_KINDS:
            for entry in info.data.get(kind, []) or []:
                if isinstance(entry, dict):
                    modules.extend(entry.get("python-modules", []))
                elif isinstance(entry, str):
                    modules.append(entry.rpartition(".")[0])
        for entry in info.data.get("transfers", []) or []:
            if isinstance(entry, dict) and "python-module" in entry:
                modules.append(entry["python-module"])
    return list(dict.fromkeys(modules))


def _classes(info: ProviderInfo) -> list[str]:
    return [
        entry["hook-class-name"]
        for entry in info.data.get("connection-types", []) or []
        if entry.get("hook-class-name")
    ]


def check_provider(name: str, info: ProviderInfo, deep: bool = False) -> ProviderStatus:
    """Import what the provider declares; an optional feature's missing extra is no failure."""
    from tradewind.exceptions import AirflowOptionalProviderFeatureException

    install()
    checked, optional, failures = 0, 0, []
    core = set(_modules(info, False)) | set(_classes(info))
    targets: list[tuple[str, Callable[[str], Any]]]
    targets = [(m, importlib.import_module) for m in _modules(info, deep)]
    targets += [(c, import_string) for c in _classes(info)]
    core_failed = False
    for target, load in targets:
        try:
            load(target)
        except AirflowOptionalProviderFeatureException:
            optional += 1
        except Exception as error:
            failures.append(f"{target}: {_line(error)}")
            core_failed = core_failed or target in core
        else:
            checked += 1
    extra = f", {optional} need an optional extra" if optional else ""
    if failures:
        why = f"{len(failures)} of {len(targets)} fail to import{extra}; first: {failures[0]}"
        return ProviderStatus(name, info.version, not core_failed, why, checked)
    return ProviderStatus(
        name, info.version, True, f"{checked} modules and hooks import{extra}", checked
    )


def _line(error: BaseException) -> str:
    cause = error.__cause__ or error
    text = str(cause).splitlines()[0] if str(cause) else ""
    return f"{type(cause).__name__}: {text}"


def provider_statuses(deep: bool = False) -> list[ProviderStatus]:
    """Every installed provider's status, by name."""
    return [
        check_provider(info.package_name, info, deep)
        for _, info in sorted(installed_providers().items())
    ]
