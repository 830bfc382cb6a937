"""Names of ``airflow.sdk`` Tradewind does not have yet, and the feature each belongs to.

Importing one fails the DAG file with one line naming the feature, so an Airflow user sees what
is missing rather than a bare ``cannot import name``; a task never starts to fail at run time.
"""

from __future__ import annotations

_PARTITIONS = "partitioned assets"

FEATURES: dict[str, str] = {}


def missing_feature(name: str, module: str) -> ImportError | AttributeError:
    """The error for ``from tradewind import name``: names the feature when it is a known one."""
    feature = FEATURES.get(name)
    if name.endswith(("Mapper", "Window")) or name in ("WaitForAll", "MinimumCount"):
        feature = _PARTITIONS
    if feature is None:
        return AttributeError(f"module {module!r} has no attribute {name!r}")
    return ImportError(
        f"{name} is not supported by Tradewind yet: {feature} (Airflow's airflow.sdk.{name})"
    )


def missing_airflow_name(name: str, module: str) -> ImportError:
    """The error for ``from airflow.x import name`` where Tradewind has no ``name``."""
    feature = FEATURES.get(name)
    because = f": {feature}" if feature else ""
    return ImportError(f"{name} (from {module}) is not supported by Tradewind{because}")
