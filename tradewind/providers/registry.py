"""The installed providers' hooks and connection types, read from their entry points.

Every provider wheel declares an ``apache_airflow_provider`` entry point whose function returns
its ``provider_info``: its package name, versions, and ``connection-types`` (each a
``connection-type`` and the ``hook-class-name`` serving it). ``ProvidersManager`` is Airflow's
name for that registry; ``Connection.get_hook()`` finds a connection's hook class through it.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from importlib import metadata
from typing import Any

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "apache_airflow_provider"


@dataclass(frozen=True)
class ProviderInfo:
    """One installed provider: its distribution, version and what its entry point says."""

    version: str
    data: dict[str, Any]
    package_name: str


@dataclass(frozen=True)
class HookInfo:
    """A connection type, and the hook class (``module.Class``) that serves it."""

    hook_class_name: str
    connection_id_attribute_name: str
    package_name: str
    hook_name: str
    connection_type: str
    connection_testable: bool = False


@functools.cache
def installed_providers() -> dict[str, ProviderInfo]:
    """Each installed provider by its distribution name, read once per process."""
    from tradewind.airflow_paths import install

    install()  # a provider's package imports airflow's names first
    found: dict[str, ProviderInfo] = {}
    for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        distribution = entry_point.dist
        name = distribution.metadata["Name"] if distribution is not None else entry_point.value
        version = distribution.version if distribution is not None else "?"
        try:
            data = entry_point.load()()
        except Exception as error:  # a broken provider must not hide the others
            log.warning("provider %s: its provider info cannot be read: %s", name, error)
            continue
        found[data.get("package-name", name)] = ProviderInfo(version, data, name)
    return found


@functools.cache
def connection_types() -> dict[str, tuple[str, str]]:
    """``connection-type`` -> (hook class path, provider's package name)."""
    types: dict[str, tuple[str, str]] = {}
    for package, info in sorted(installed_providers().items()):
        for entry in info.data.get("connection-types", []):
            kind = entry.get("connection-type")
            hook = entry.get("hook-class-name")
            if kind and hook:
                types.setdefault(kind, (hook, package))
    return types


def hook_class_name(conn_type: str) -> str | None:
    found = connection_types().get(conn_type)
    return found[0] if found else None


class ProvidersManager:
    """Airflow's registry of installed providers, as far as providers read it at run time."""

    _instance: ProvidersManager | None = None

    def __new__(cls) -> ProvidersManager:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    @property
    def providers(self) -> dict[str, ProviderInfo]:
        return installed_providers()

    @property
    def hooks(self) -> dict[str, HookInfo | None]:
        return {kind: self._hook_info(kind) for kind in connection_types()}

    def _hook_info(self, kind: str) -> HookInfo | None:
        hook, package = connection_types()[kind]
        return HookInfo(
            hook_class_name=hook,
            connection_id_attribute_name="conn_id",
            package_name=package,
            hook_name=kind,
            connection_type=kind,
        )

    @property
    def connection_form_widgets(self) -> dict[str, Any]:
        return {}

    @property
    def field_behaviours(self) -> dict[str, Any]:
        return {}

    @property
    def dialects(self) -> dict[str, Any]:
        return {}

    @property
    def filesystem_module_names(self) -> list[str]:
        return sorted(
            module
            for info in installed_providers().values()
            for module in info.data.get("filesystems", [])
        )

    def initialize_providers_list(self) -> None:
        installed_providers()

    def initialize_providers_hooks(self) -> None:
        connection_types()

    def initialize_providers_dialects(self) -> None:
        return None

    def initialize_providers_filesystems(self) -> None:
        return None


@functools.cache
def config_defaults() -> dict[str, dict[str, str]]:
    """The options the installed providers declare (``config`` of their info), with defaults."""
    sections: dict[str, dict[str, str]] = {}
    for info in installed_providers().values():
        for section, body in (info.data.get("config") or {}).items():
            for option, spec in (body.get("options") or {}).items():
                default = spec.get("default")
                if default is not None:
                    sections.setdefault(section.lower(), {}).setdefault(option.lower(), default)
    return sections
