"""The backend ``TRADEWIND_XCOM_BACKEND`` names: ``sql`` (default), ``object_storage``,
``stub``, or the dotted path of an ``XComBackend`` subclass (``package.module.ClassName`` or
``package.module:ClassName``).

A name that does not import, or imports something that is not a backend, is a ``SettingsError``
naming the variable: checked when a try starts, so a misconfigured worker fails the try with
that line rather than deep inside a push.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from tradewind.settings import SettingsError
from worker.xcom.base import Lookups, XComBackend
from worker.xcom.sql import SqlXComBackend

if TYPE_CHECKING:
    from tradewind.settings import Settings

_BUILT_IN = {
    "sql": "worker.xcom.sql:SqlXComBackend",
    "object_storage": "worker.xcom.object_storage:ObjectStorageXComBackend",
    "stub": "worker.xcom.stub:StubXComBackend",
}
_VARIABLE = "TRADEWIND_XCOM_BACKEND"


def backend_class(name: str) -> type[XComBackend]:
    """The backend class ``name`` stands for; a ``SettingsError`` if there is none."""
    path = _BUILT_IN.get(name, name)
    module_name, sep, attribute = path.partition(":")
    if not sep:
        module_name, _, attribute = path.rpartition(".")
    if not module_name or not attribute:
        raise SettingsError(
            f"{_VARIABLE}={name!r}: use sql, object_storage, stub, or a dotted path such as "
            "package.module.ClassName"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise SettingsError(
            f"{_VARIABLE}={name!r}: {module_name} does not import: {error}"
        ) from None
    found = getattr(module, attribute, None)
    if found is None:
        raise SettingsError(f"{_VARIABLE}={name!r}: {module_name} has no {attribute!r}")
    if not (isinstance(found, type) and issubclass(found, XComBackend)):
        raise SettingsError(
            f"{_VARIABLE}={name!r}: {path} is not an XCom backend (a subclass of "
            "worker.xcom.XComBackend)"
        )
    return found


def make_backend(settings: Settings, lookups: Lookups) -> XComBackend:
    """The configured backend, built in the process that will use it."""
    return backend_class(settings.xcom_backend).from_settings(settings, lookups)


def runs_in_helper(cls: type[XComBackend]) -> bool:
    """Whether a runtime task's XComs go through the helper: every backend but the SQL one."""
    return cls is not SqlXComBackend
