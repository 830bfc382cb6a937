"""Trigger rules a task may declare (the subset of Airflow's that Tradewind supports)."""

from __future__ import annotations

from enum import StrEnum


class TriggerRule(StrEnum):
    ALL_SUCCESS = "all_success"
    ALL_DONE = "all_done"
    ONE_FAILED = "one_failed"
    NONE_FAILED = "none_failed"
