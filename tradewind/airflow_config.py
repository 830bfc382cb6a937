"""Airflow's ``conf`` (``airflow.configuration.conf``) for DAG files that read a setting.

Tradewind has no ``airflow.cfg``: a value comes from ``AIRFLOW__{SECTION}__{KEY}`` in the
environment (the variable Airflow itself would read first), then the ``fallback`` the file gives;
with neither, the one-line error names the variable to set. ``[core] dags_folder`` is Tradewind's
DAGs folder. The installed providers' own options come with the defaults their provider info
declares (``tradewind/providers/registry.py``), as in Airflow.
"""

from __future__ import annotations

import json
import os
from typing import Any

from tradewind.exceptions import AirflowConfigException

_MISSING = object()
_TRUE = frozenset({"true", "t", "1", "yes", "y", "on"})
_FALSE = frozenset({"false", "f", "0", "no", "n", "off"})


def _variable(section: str, key: str) -> str:
    return f"AIRFLOW__{section.upper()}__{key.upper()}"


class AirflowConfig:
    """``conf.get(section, key, fallback=...)`` and its typed forms."""

    def has_option(self, section: str, key: str) -> bool:
        return self._known(section, key) is not None

    def get(self, section: str, key: str, fallback: Any = _MISSING, **_: Any) -> Any:
        value = self._known(section, key)
        if value is not None:
            return value
        if fallback is _MISSING:
            raise AirflowConfigException(
                f"[{section}] {key} is not set: Tradewind reads it from {_variable(section, key)}"
            )
        return fallback

    def getboolean(self, section: str, key: str, fallback: Any = _MISSING, **_: Any) -> Any:
        value = self.get(section, key, fallback)
        if not isinstance(value, str):
            return value
        if value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise AirflowConfigException(f"[{section}] {key} is not a boolean: {value!r}")

    def getint(self, section: str, key: str, fallback: Any = _MISSING, **_: Any) -> Any:
        value = self.get(section, key, fallback)
        return int(value) if isinstance(value, str) else value

    def getfloat(self, section: str, key: str, fallback: Any = _MISSING, **_: Any) -> Any:
        value = self.get(section, key, fallback)
        return float(value) if isinstance(value, str) else value

    def getimport(self, section: str, key: str, fallback: Any = _MISSING, **_: Any) -> Any:
        """The object a ``module.Name`` setting names; None when it is empty."""
        value = self.get(section, key, fallback)
        if not isinstance(value, str) or not value:
            return value if not isinstance(value, str) else None
        from tradewind.providers.compat import import_string

        try:
            return import_string(value)
        except ImportError as error:
            raise AirflowConfigException(f"[{section}] {key}: {error}") from None

    def getjson(self, section: str, key: str, fallback: Any = _MISSING, **_: Any) -> Any:
        value = self.get(section, key, fallback)
        if not isinstance(value, str):
            return value
        try:
            return json.loads(value) if value else None
        except json.JSONDecodeError as error:
            raise AirflowConfigException(f"[{section}] {key} is not JSON: {error}") from None

    def getlist(
        self, section: str, key: str, delimiter: str = ",", fallback: Any = _MISSING, **_: Any
    ) -> Any:
        value = self.get(section, key, fallback)
        if not isinstance(value, str):
            return value
        return [item.strip() for item in value.split(delimiter) if item.strip()]

    def getsection(self, section: str) -> dict[str, str] | None:
        from tradewind.providers.registry import config_defaults

        prefix = f"AIRFLOW__{section.upper()}__"
        found = dict(config_defaults().get(section.lower(), {}))
        for name, value in os.environ.items():
            if name.startswith(prefix):
                found[name[len(prefix) :].lower()] = value
        return found or None

    def _known(self, section: str, key: str) -> str | None:
        value = os.environ.get(_variable(section, key))
        if value is None and (section.lower(), key.lower()) == ("core", "dags_folder"):
            from tradewind.settings import get_settings

            return str(get_settings().resolved_dags_folder)
        if value is None:
            from tradewind.providers.registry import config_defaults

            value = config_defaults().get(section.lower(), {}).get(key.lower())
        return value


conf = AirflowConfig()
