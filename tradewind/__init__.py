"""Tradewind: Airflow-style DAGs on a fleet of Celery workers.

What DAG authors import; the names follow Airflow 3's TaskFlow API (``airflow.sdk``).
"""

from __future__ import annotations

from tradewind.connections import Connection, Variable, mask_secret
from tradewind.context import get_current_context
from tradewind.dag import DAG, dag
from tradewind.exceptions import (
    AirflowFailException,
    AirflowSkipException,
    DagDefinitionError,
    FailTask,
    SkipTask,
)
from tradewind.state_store import NEVER_EXPIRE
from tradewind.task import task
from tradewind.trigger_rules import TriggerRule

__all__ = [
    "DAG",
    "NEVER_EXPIRE",
    "AirflowFailException",
    "AirflowSkipException",
    "Connection",
    "DagDefinitionError",
    "FailTask",
    "SkipTask",
    "TriggerRule",
    "Variable",
    "dag",
    "get_current_context",
    "mask_secret",
    "task",
]
