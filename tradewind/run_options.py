"""The arguments that act across runs and on a run's life, checked where a DAG file loads.

``depends_on_past`` / ``wait_for_downstream`` / ``end_date`` of a task and ``dagrun_timeout`` /
``end_date`` / ``fail_fast`` / ``is_paused_upon_creation`` of a DAG: the scheduler acts on what
``dag_run_structure`` and ``task_run_structure`` write into the stored structure, so a bad value
is refused here, in one line naming the DAG or task, never met later by the scheduler.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from typing import Any

from tradewind.exceptions import DagDefinitionError

#: The trigger rules a task of a ``fail_fast`` DAG may have, as in Airflow.
FAIL_FAST_RULES = ("all_success", "all_done_setup_success")


@dataclass(frozen=True)
class RunOptions:
    """A DAG's options on the life of its runs, checked."""

    dagrun_timeout: dt.timedelta | None = None
    end_date: dt.datetime | None = None
    fail_fast: bool = False
    is_paused_upon_creation: bool | None = None

    @classmethod
    def of(cls, dag_id: str, arguments: dict[str, Any]) -> RunOptions:
        """Take this DAG's run options out of ``arguments`` (what ``DAG(...)`` was left)."""
        where = f"DAG {dag_id}"
        timeout = arguments.pop("dagrun_timeout", None)
        if timeout is not None and (
            not isinstance(timeout, dt.timedelta) or timeout <= dt.timedelta(0)
        ):
            raise DagDefinitionError(
                f"{where}: dagrun_timeout must be a positive timedelta, got {timeout!r}"
            )
        paused = arguments.pop("is_paused_upon_creation", None)
        if paused is not None and not isinstance(paused, bool):
            raise DagDefinitionError(
                f"{where}: is_paused_upon_creation must be True, False or None, got {paused!r}"
            )
        return cls(
            dagrun_timeout=timeout,
            end_date=aware_date(where, "end_date", arguments.pop("end_date", None)),
            fail_fast=_flag(where, "fail_fast", arguments.pop("fail_fast", False)),
            is_paused_upon_creation=paused,
        )

    def structure(self) -> dict[str, Any]:
        """The keys the scheduler reads; only those set, so other DAGs keep their hashes."""
        keys: dict[str, Any] = {}
        if self.dagrun_timeout is not None:
            keys["dagrun_timeout_seconds"] = self.dagrun_timeout.total_seconds()
        if self.end_date is not None:
            keys["end_date"] = self.end_date.isoformat()
        if self.fail_fast:
            keys["fail_fast"] = True
        return keys

    def bound(self, options: Any) -> Any:
        """A task's options with its ``end_date`` no later than the DAG's, as Airflow bounds a
        task by its DAG (``options`` unchanged when the DAG has none or the task's is earlier:
        a decorator's options are shared by every task it made)."""
        own = options.end_date
        if self.end_date is None or (own is not None and own <= self.end_date):
            return options
        return replace(options, end_date=self.end_date)


def check_fail_fast_rule(dag_id: str, task_id: str, trigger_rule: str) -> None:
    """A ``fail_fast`` DAG stops everything at the first failure: a task meant to run after
    one (``all_done``, ``one_failed``...) could never run, so Airflow refuses it."""
    if trigger_rule not in FAIL_FAST_RULES:
        raise DagDefinitionError(
            f"DAG {dag_id}: task {task_id}: a fail_fast DAG takes trigger_rule all_success only, "
            f"got {trigger_rule}"
        )


def aware_date(where: str, name: str, value: Any) -> dt.datetime | None:
    """A datetime or an ISO 8601 text (naive ones read as UTC, as ``start_date``)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError:
            raise DagDefinitionError(
                f"{where}: {name} must be a datetime or an ISO 8601 date, got {value!r}"
            ) from None
    if not isinstance(value, dt.datetime):
        raise DagDefinitionError(f"{where}: {name} must be a datetime, got {value!r}")
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def _flag(where: str, name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise DagDefinitionError(f"{where}: {name} must be True or False, got {value!r}")
    return value


def task_run_structure(options: Any) -> dict[str, Any]:
    """A task's keys for the scheduler (``TaskOptions``' past and end options); only those set."""
    keys: dict[str, Any] = {}
    if options.depends_on_past:
        keys["depends_on_past"] = True
    if options.wait_for_downstream:
        keys["wait_for_downstream"] = True
    if options.ignore_first_depends_on_past:
        keys["ignore_first_depends_on_past"] = True
    if options.end_date is not None:
        keys["end_date"] = options.end_date.isoformat()
    return keys


def check_task_run_options(options: Any) -> None:
    """Check a task's past and end options in place; ``wait_for_downstream`` implies
    ``depends_on_past``, as in Airflow."""
    where = f"task {options.task_id}" if options.task_id else "task"
    options.depends_on_past = _flag(where, "depends_on_past", options.depends_on_past)
    options.wait_for_downstream = _flag(where, "wait_for_downstream", options.wait_for_downstream)
    options.ignore_first_depends_on_past = _flag(
        where, "ignore_first_depends_on_past", options.ignore_first_depends_on_past
    )
    if options.wait_for_downstream:
        options.depends_on_past = True
    options.end_date = aware_date(where, "end_date", options.end_date)
