"""Triggers: what a deferred task waits on in the triggerer (DESIGN.md §12).

``BaseTrigger`` is the class to subclass (``serialize()`` and ``async run()``); the standard
provider's triggers live in the modules beside it. Airflow's import paths
(``airflow.triggers.base``, ``airflow.sdk.BaseTrigger``, ``airflow.providers.standard.triggers.*``)
serve these names (``tradewind/airflow_paths/names.py``). docs/triggerer.md says how to write one.
"""

from __future__ import annotations

from tradewind.triggers.base import (
    BaseEventTrigger,
    BaseTrigger,
    TaskDeferred,
    TriggerEvent,
    build_trigger,
    classpath_of,
)

__all__ = [
    "BaseEventTrigger",
    "BaseTrigger",
    "TaskDeferred",
    "TriggerEvent",
    "build_trigger",
    "classpath_of",
]
