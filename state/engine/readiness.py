"""Which task instances of a run are ready, under the trigger rules: pure functions over rows.

Both the scheduler and a supervisor that just finished a try use this, so it lives in
``state/`` and reads only a run's serialized structure and its task instances' states.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from state.core import FINISHED, DagStructure, TaskInstanceState, TaskSpec

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


@dataclass(frozen=True)
class Upstream:
    """The counts a trigger rule reads: its upstream task instances by state, removed aside."""

    states: Counter[TaskInstanceState]
    total: int
    # The same counts over the upstream tasks that are setups (all_done_setup_success).
    setups: Counter[TaskInstanceState] = field(default_factory=Counter)

    def __getitem__(self, state: TaskInstanceState) -> int:
        return self.states[state]

    @property
    def done(self) -> bool:
        return sum(self.states[state] for state in FINISHED) == self.total

    @property
    def failed(self) -> int:
        return sum(self.states[state] for state in _FAILED)


Rule = Callable[[Upstream], "TaskInstanceState | None"]
_RUN, _SKIP, _UPSTREAM_FAILED = TI.SCHEDULED, TI.SKIPPED, TI.UPSTREAM_FAILED


def _all_success(up: Upstream) -> TaskInstanceState | None:
    # One failure or skip upstream decides at once, a failure first, as in Airflow.
    if up.failed:
        return _UPSTREAM_FAILED
    if up[TI.SKIPPED]:
        return _SKIP
    return _RUN if up[TI.SUCCESS] == up.total else None


def _all_failed(up: Upstream) -> TaskInstanceState | None:
    if up[TI.SUCCESS] or up[TI.SKIPPED]:
        return _SKIP
    return _RUN if up.done else None


def _all_done(up: Upstream) -> TaskInstanceState | None:
    return _RUN if up.done else None


def _all_done_min_one_success(up: Upstream) -> TaskInstanceState | None:
    if not up.done:
        return None
    if up[TI.SUCCESS]:
        return _RUN
    return _SKIP if up[TI.SKIPPED] == up.total else _UPSTREAM_FAILED


def _all_done_setup_success(up: Upstream) -> TaskInstanceState | None:
    """A teardown's rule: it runs once everything upstream is done if one of its setups ran."""
    if not up.done:
        return None
    setups = sum(up.setups.values())
    if setups and up.setups[TI.SKIPPED] == setups:
        return _SKIP
    if setups and not up.setups[TI.SUCCESS]:
        return _UPSTREAM_FAILED
    return _RUN


def _all_skipped(up: Upstream) -> TaskInstanceState | None:
    if up[TI.SUCCESS] or up.failed:
        return _SKIP
    return _RUN if up.done else None


def _one_success(up: Upstream) -> TaskInstanceState | None:
    if up[TI.SUCCESS]:
        return _RUN
    if not up.done:
        return None
    return _SKIP if up[TI.SKIPPED] == up.total else _UPSTREAM_FAILED


def _one_failed(up: Upstream) -> TaskInstanceState | None:
    if up.failed:
        return _RUN
    return _SKIP if up.done else None


def _one_done(up: Upstream) -> TaskInstanceState | None:
    if up[TI.SUCCESS] or up[TI.FAILED]:
        return _RUN
    return _SKIP if up.done else None


def _none_failed(up: Upstream) -> TaskInstanceState | None:
    if up.failed:
        return _UPSTREAM_FAILED  # at once, as all_success
    return _RUN if up.done else None


def _none_failed_min_one_success(up: Upstream) -> TaskInstanceState | None:
    if up.failed:
        return _UPSTREAM_FAILED
    if not up.done:
        return None
    return _SKIP if up[TI.SKIPPED] == up.total else _RUN


def _none_skipped(up: Upstream) -> TaskInstanceState | None:
    if up[TI.SKIPPED]:
        return _SKIP
    return _RUN if up.done else None


def _always(up: Upstream) -> TaskInstanceState | None:
    return _RUN


#: Airflow 3's trigger rules: where a ``none`` task instance goes given its upstream counts.
RULES: dict[str, Rule] = {
    "all_success": _all_success,
    "all_failed": _all_failed,
    "all_done": _all_done,
    "all_done_min_one_success": _all_done_min_one_success,
    "all_done_setup_success": _all_done_setup_success,
    "all_skipped": _all_skipped,
    "one_success": _one_success,
    "one_failed": _one_failed,
    "one_done": _one_done,
    "none_failed": _none_failed,
    "none_failed_min_one_success": _none_failed_min_one_success,
    "none_skipped": _none_skipped,
    "always": _always,
}


def decide(
    rule: str,
    upstream: Counter[TaskInstanceState],
    total: int,
    setups: Counter[TaskInstanceState] | None = None,
) -> TaskInstanceState | None:
    """Where a ``none`` task instance goes given its upstream states; None: keep waiting.

    ``setups``: the states of the upstream task instances that are setups, counted in
    ``upstream`` too (only ``all_done_setup_success`` reads them).
    """
    if total == 0:
        return TI.SCHEDULED  # no upstream (or only removed ones): nothing to wait for, any rule
    return RULES[rule](Upstream(upstream, total, setups or Counter()))


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
            target = _decide_row(tasks, tasks[row.task_id], rows_of_task, state_of)
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
    tasks: Mapping[str, TaskSpec],
    spec: TaskSpec,
    rows_of_task: Mapping[str, list[int]],
    state_of: Mapping[int, TaskInstanceState],
) -> TaskInstanceState | None:
    upstream: Counter[TaskInstanceState] = Counter()
    setups: Counter[TaskInstanceState] = Counter()
    for upstream_id in spec.upstream:
        # A removed upstream (gone from the DAG) neither blocks nor fails its downstream.
        states = [state_of[ti_id] for ti_id in rows_of_task.get(upstream_id, [])]
        counted = [state for state in states if state != TI.REMOVED]
        upstream.update(counted)
        upstream_spec = tasks.get(upstream_id)
        if upstream_spec is not None and upstream_spec.is_setup:
            setups.update(counted)
    return decide(spec.trigger_rule, upstream, sum(upstream.values()), setups)


def run_outcome(
    states: list[TaskInstanceState], not_deciding: Collection[TaskInstanceState] = ()
) -> str | None:
    """``success`` / ``failed`` once every task instance is finished; None while work remains.

    Removed task instances never count; a failed task with retries left is ``up_for_retry``,
    not finished, so the run keeps running (apache/airflow#7939). ``not_deciding``: the states
    of teardowns that do not decide the run (as in Airflow, unless ``on_failure_fail_dagrun``):
    the run waits for them, but their failure does not fail it.
    """
    counted = [state for state in states if state != TI.REMOVED]
    if any(state not in FINISHED for state in (*counted, *not_deciding)):
        return None
    return "failed" if any(state in _FAILED for state in counted) else "success"
