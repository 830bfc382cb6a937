"""Which task instances of a run are ready, under the trigger rules: pure functions over rows.

Both the scheduler and a supervisor that just finished a try use this, so it lives in
``state/`` and reads only a run's serialized structure and its task instances' states.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from state.enums import FINISHED, TaskInstanceState
from state.structure import DagStructure, TaskSpec

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
    if total == 0:
        return TI.SCHEDULED  # no upstream (or only removed ones): nothing to wait for, any rule
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


def evaluate(
    structure: DagStructure, rows: list[TIRow], only: Collection[str] | None = None
) -> Decisions:
    """Decide every ``none`` task instance of one run, from one read of its rows.

    A decision that finishes a task instance (upstream_failed, skipped) can decide its own
    downstream in turn: this repeats in memory until nothing changes, so a failure reaches the end
    of a long chain in one pass instead of one scheduler loop per level. ``only``: decide the
    task instances of these tasks alone (``rows`` then holds them and their upstreams').
    """
    tasks = structure.tasks
    state_of = {row.id: TI(row.state) for row in rows}
    rows_of_task: dict[str, list[int]] = {}
    for row in rows:
        rows_of_task.setdefault(row.task_id, []).append(row.id)
    decisions = Decisions()
    pending = [
        row
        for row in rows
        if row.state == TI.NONE and row.task_id in tasks and (only is None or row.task_id in only)
    ]
    while pending:
        undecided, cascaded = [], False
        for row in pending:
            target = _decide_row(tasks[row.task_id], rows_of_task, state_of)
            if target is None:
                undecided.append(row)
                continue
            decisions.target(target).append(row.id)
            state_of[row.id] = target
            cascaded = cascaded or target in FINISHED
        if not cascaded:
            break
        pending = undecided
    return decisions


def _decide_row(
    spec: TaskSpec,
    rows_of_task: Mapping[str, list[int]],
    state_of: Mapping[int, TaskInstanceState],
) -> TaskInstanceState | None:
    upstream: Counter[TaskInstanceState] = Counter()
    for upstream_id in spec.upstream:
        # A removed upstream (gone from the DAG) neither blocks nor fails its downstream.
        states = (state_of[ti_id] for ti_id in rows_of_task.get(upstream_id, []))
        upstream.update(state for state in states if state != TI.REMOVED)
    return decide(spec.trigger_rule, upstream, sum(upstream.values()))


def run_outcome(states: list[TaskInstanceState]) -> str | None:
    """``success`` / ``failed`` once every task instance is finished; None while work remains.

    Removed task instances never count; a failed task with retries left is ``up_for_retry``,
    not finished, so the run keeps running (apache/airflow#7939).
    """
    counted = [state for state in states if state != TI.REMOVED]
    if any(state not in FINISHED for state in counted):
        return None
    return "failed" if any(state in _FAILED for state in counted) else "success"
