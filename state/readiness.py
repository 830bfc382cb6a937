"""Which task instances of a run are ready, under the trigger rules: pure functions over rows.

Both the scheduler and a supervisor that just finished a try use this, so it lives in
``state/`` and reads only a run's serialized structure and its task instances' states.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from state.enums import FINISHED, TaskInstanceState

TI = TaskInstanceState
_FAILED = frozenset({TI.FAILED, TI.UPSTREAM_FAILED})


@dataclass
class Decisions:
    """Task instances (by id) to move out of ``none``, grouped by where they go."""

    schedule: list[int] = field(default_factory=list)
    upstream_failed: list[int] = field(default_factory=list)
    skip: list[int] = field(default_factory=list)

    def target(self, state: TaskInstanceState) -> list[int]:
        return {
            TI.SCHEDULED: self.schedule,
            TI.UPSTREAM_FAILED: self.upstream_failed,
            TI.SKIPPED: self.skip,
        }[state]


def decide(rule: str, upstream: Counter[TaskInstanceState], total: int) -> TaskInstanceState | None:
    """Where a ``none`` task instance goes given its upstream states; None: keep waiting."""
    done = sum(upstream[state] for state in FINISHED)
    failed = sum(upstream[state] for state in _FAILED)
    skipped = upstream[TI.SKIPPED]
    all_done = done == total
    if rule == "all_done":
        return TI.SCHEDULED if all_done else None
    if rule == "one_failed":
        if failed:
            return TI.SCHEDULED
        return TI.SKIPPED if all_done else None
    if rule == "none_failed":
        if not all_done:
            return None
        return TI.UPSTREAM_FAILED if failed else TI.SCHEDULED
    # all_success: one failure or skip upstream decides at once, as in Airflow.
    if failed:
        return TI.UPSTREAM_FAILED
    if skipped:
        return TI.SKIPPED
    return TI.SCHEDULED if upstream[TI.SUCCESS] == total else None


@dataclass(frozen=True)
class TIRow:
    """The columns readiness looks at."""

    id: int
    task_id: str
    state: TaskInstanceState


def evaluate(structure: Mapping[str, Any], rows: list[TIRow]) -> Decisions:
    """Decide every ``none`` task instance of one run, from one read of its rows."""
    states_by_task: dict[str, list[TaskInstanceState]] = {}
    for row in rows:
        states_by_task.setdefault(row.task_id, []).append(TI(row.state))
    tasks: Mapping[str, Any] = structure["tasks"]
    decisions = Decisions()
    for row in rows:
        if row.state != TI.NONE or row.task_id not in tasks:
            continue
        upstream: Counter[TaskInstanceState] = Counter()
        for upstream_id in tasks[row.task_id]["upstream"]:
            # A removed upstream (gone from the DAG) neither blocks nor fails its downstream.
            upstream.update(s for s in states_by_task.get(upstream_id, []) if s != TI.REMOVED)
        target = decide(tasks[row.task_id]["trigger_rule"], upstream, sum(upstream.values()))
        if target is not None:
            decisions.target(target).append(row.id)
    return decisions


def run_outcome(states: list[TaskInstanceState]) -> str | None:
    """``success`` / ``failed`` once every task instance is finished; None while work remains.

    Removed task instances never count; a failed task with retries left is ``up_for_retry``,
    not finished, so the run keeps running (apache/airflow#7939).
    """
    counted = [state for state in states if state != TI.REMOVED]
    if any(state not in FINISHED for state in counted):
        return None
    return "failed" if any(state in _FAILED for state in counted) else "success"
