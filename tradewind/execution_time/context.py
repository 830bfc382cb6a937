"""``airflow.sdk.execution_time.context``'s public names (``NEVER_EXPIRE``), for DAG files that
import them from there."""

from __future__ import annotations

from tradewind.context import get_current_context
from tradewind.state_store import NEVER_EXPIRE

__all__ = ["NEVER_EXPIRE", "get_current_context"]
