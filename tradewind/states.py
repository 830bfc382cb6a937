"""Airflow's state names (``airflow.utils.state``, ``airflow.sdk.TaskInstanceState``), for DAG
files that compare or pass them (``allowed_states=[State.SUCCESS]``)."""

from __future__ import annotations

from enum import StrEnum


class TaskInstanceState(StrEnum):
    SCHEDULED = "scheduled"
    QUEUED = "queued"
    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"
    SKIPPED = "skipped"
    UP_FOR_RETRY = "up_for_retry"
    UP_FOR_RESCHEDULE = "up_for_reschedule"
    UPSTREAM_FAILED = "upstream_failed"
    REMOVED = "removed"
    RESTARTING = "restarting"
    DEFERRED = "deferred"
    AWAITING_INPUT = "awaiting_input"


class DagRunState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"


class State:
    """Airflow 2's ``State``: the task instance states as attributes, and ``NONE``."""

    NONE = None
    SCHEDULED = TaskInstanceState.SCHEDULED
    QUEUED = TaskInstanceState.QUEUED
    RUNNING = TaskInstanceState.RUNNING
    SUCCESS = TaskInstanceState.SUCCESS
    FAILED = TaskInstanceState.FAILED
    SKIPPED = TaskInstanceState.SKIPPED
    UP_FOR_RETRY = TaskInstanceState.UP_FOR_RETRY
    UP_FOR_RESCHEDULE = TaskInstanceState.UP_FOR_RESCHEDULE
    UPSTREAM_FAILED = TaskInstanceState.UPSTREAM_FAILED
    REMOVED = TaskInstanceState.REMOVED
    finished = frozenset({SUCCESS, FAILED, SKIPPED, UPSTREAM_FAILED, REMOVED})
    unfinished = frozenset({None, SCHEDULED, QUEUED, RUNNING, UP_FOR_RETRY, UP_FOR_RESCHEDULE})
