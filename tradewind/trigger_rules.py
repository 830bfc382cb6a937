"""Trigger rules a task may declare: every rule of Airflow 3 (``state.engine.readiness`` decides
them)."""

from __future__ import annotations

from enum import StrEnum

from tradewind.spellings import airflow2_spelling


class TriggerRule(StrEnum):
    ALL_SUCCESS = "all_success"
    ALL_FAILED = "all_failed"
    ALL_DONE = "all_done"
    ALL_DONE_MIN_ONE_SUCCESS = "all_done_min_one_success"
    ALL_DONE_SETUP_SUCCESS = "all_done_setup_success"
    ALL_SKIPPED = "all_skipped"
    ONE_SUCCESS = "one_success"
    ONE_FAILED = "one_failed"
    ONE_DONE = "one_done"
    NONE_FAILED = "none_failed"
    NONE_FAILED_MIN_ONE_SUCCESS = "none_failed_min_one_success"
    NONE_SKIPPED = "none_skipped"
    ALWAYS = "always"


#: Airflow 2's names of rules Airflow 3 renamed.
AIRFLOW2_RULES = {
    "none_failed_or_skipped": TriggerRule.NONE_FAILED_MIN_ONE_SUCCESS,
    "dummy": TriggerRule.ALWAYS,
}


def trigger_rule_of(value: str) -> TriggerRule:
    """The rule ``value`` names; an Airflow 2 name is noted with Airflow 3's. ValueError if none."""
    renamed = AIRFLOW2_RULES.get(value)
    if renamed is not None:
        airflow2_spelling(f"trigger_rule={value!r}", f"{renamed.value!r}")
        return renamed
    return TriggerRule(value)
