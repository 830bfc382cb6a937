"""Airflow's ``conf`` (``airflow.configuration.conf``) for DAG files that read a setting.

Tradewind has no ``airflow.cfg``: a value comes from ``AIRFLOW__{SECTION}__{KEY}`` in the
environment (the variable Airflow itself would read first), then the ``fallback`` the file gives;
with neither, the one-line error names the variable to set. ``[core] dags_folder`` is Tradewind's
DAGs folder.
"""

from __future__ import annotations

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

    def _known(self, section: str, key: str) -> str | None:
        value = os.environ.get(_variable(section, key))
        if value is None and (section.lower(), key.lower()) == ("core", "dags_folder"):
            from tradewind.settings import get_settings

            return str(get_settings().resolved_dags_folder)
        return value


conf = AirflowConfig()
