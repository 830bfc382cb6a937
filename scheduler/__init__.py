"""The producer: DAG sync, run creation, scheduling, retries, zombies and lost messages."""

from __future__ import annotations

from scheduler.dag_sync import SyncResult, sync_dags
from scheduler.loop import Scheduler

__all__ = ["Scheduler", "SyncResult", "sync_dags"]
