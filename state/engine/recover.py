"""Clear and mark with Airflow's scopes: what changes is computed once, here, then carried out.

The API (``clearTaskInstances``, the task instance and task group ``PATCH``es and their dry
runs, the bulk routes), the UI's confirmation dialogs and the CLI all ask the same two
questions: *which task instances does this clear (or mark) change?* (``plan_clear``,
``plan_mark``, ``plan_run_mark``) and *do it* (``apply_plan``). A dry run is the plan alone,
so what a person confirms is exactly what is then done: the plan is computed again in the
transaction that applies it, from the same selection and scope.

Scopes, as Airflow has them: the targets (tasks, ``(task_id, map_index)`` pairs, or a task
group's tasks) with every task upstream and/or downstream of them, in the chosen run and, with
``past`` / ``future``, in every run of the DAG whose logical date is before / after it; only
the failed (``failed``, ``upstream_failed``) and/or only the running ones. A clear also follows
``ExternalTaskMarker``s into the runs they mark (``state.engine.marker_clear``). ``by`` names
the person acting (None: not known), for the event log to record.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from sqlalchemy import ColumnElement, and_, or_, select
from sqlalchemy.orm import Session

from state.core import (
    CLEARABLE,
    FINISHED,
    DagRun,
    DagRunState,
    DagStructure,
    NotFound,
    TaskInstance,
    TaskInstanceState,
    TaskSpec,
    structure_of,
)
from state.engine.cross_dag import Purgers
from state.engine.marker_clear import MarkerHop, marked_clears
from state.engine.runs import get_dag_model, reset_task_instances
from state.records import mark_run_state, mark_task_instances

TI = TaskInstanceState
#: A target: a task id (every map index of it), or one map index of a task.
Target = str | tuple[str, int]
FAILED_STATES = frozenset({TI.FAILED, TI.UPSTREAM_FAILED})
#: A plan larger than this is refused: narrow the scope (a clear is one transaction).
MAX_CHANGES = 100_000
_OF_RUN = and_(DagRun.dag_id == TaskInstance.dag_id, DagRun.run_id == TaskInstance.run_id)


class BadScope(ValueError):
    """A selection or scope that cannot be applied (unknown group, no logical date, too big)."""


class UnknownTask(LookupError):
    """A target names a task the DAG does not have."""


@dataclass(frozen=True)
class Scope:
    """How far a clear or a mark reaches beyond its targets (Airflow's checkboxes)."""

    upstream: bool = False
    downstream: bool = False
    past: bool = False
    future: bool = False
    only_failed: bool = False
    only_running: bool = False

    def states(self, base: Iterable[TaskInstanceState]) -> frozenset[TaskInstanceState]:
        """The states a task instance may be in to be changed: ``base`` narrowed by "only"."""
        wanted: set[TaskInstanceState] = set()
        if self.only_failed:
            wanted |= FAILED_STATES
        if self.only_running:
            wanted.add(TI.RUNNING)
        return frozenset(base) & wanted if wanted else frozenset(base)


@dataclass(frozen=True)
class Runs:
    """Which runs of a DAG: one named run (with ``past``/``future`` from the scope), or a
    window of logical dates (either end open), as ``clearTaskInstances`` without a run."""

    run_id: str | None = None
    start: dt.datetime | None = None
    end: dt.datetime | None = None


@dataclass(frozen=True)
class Change:
    """One task instance a plan changes, from the state it is in now to ``to_state``."""

    ti: TaskInstance
    run: DagRun
    to_state: TaskInstanceState


@dataclass(frozen=True)
class Plan:
    """What a clear or mark changes: the task instances in order (DAG, run, task, index)."""

    action: Literal["clear", "mark"]
    changes: tuple[Change, ...] = ()
    runs_marked: tuple[tuple[DagRun, DagRunState], ...] = field(default=())

    @property
    def tis(self) -> list[TaskInstance]:
        return [change.ti for change in self.changes]


def relatives(
    tasks: Mapping[str, TaskSpec], task_ids: Iterable[str], upstream: bool, downstream: bool
) -> set[str]:
    """``task_ids`` with, as asked, every task upstream of them and every task downstream of
    them, however far (not the downstream of an upstream: a sibling branch stays out)."""
    chosen = set(task_ids)
    if upstream:
        chosen |= _closure(tasks, chosen, lambda spec: spec.upstream)
    if downstream:
        chosen |= _closure(tasks, set(task_ids), lambda spec: spec.downstream)
    return chosen


def _closure(
    tasks: Mapping[str, TaskSpec], start: set[str], near: Callable[[TaskSpec], Iterable[str]]
) -> set[str]:
    reached = set(start)
    pending = list(start)
    while pending:
        spec = tasks.get(pending.pop())
        for other in near(spec) if spec else ():
            if other in tasks and other not in reached:
                reached.add(other)
                pending.append(other)
    return reached


def group_task_ids(structure: DagStructure, group_id: str) -> list[str]:
    """Every task of a task group, its nested groups' included (``BadScope`` if none)."""
    if group_id not in structure.groups:
        raise BadScope(f"DAG {structure.dag_id!r} has no task group {group_id!r}")
    inside = {group_id}
    grew = True
    while grew:  # nested groups name their parent: take them until no more come in
        more = {g for g, spec in structure.groups.items() if spec.parent in inside} - inside
        inside |= more
        grew = bool(more)
    return sorted(t for g in inside for t in structure.groups[g].tasks)


def _selector(
    structure: DagStructure, targets: Sequence[Target] | None, scope: Scope
) -> ColumnElement[bool] | None:
    """The WHERE part choosing the targets' task instances and their relatives (None: all)."""
    if targets is None:
        return None
    tasks = structure.tasks
    named = {t if isinstance(t, str) else t[0] for t in targets}
    unknown = sorted(named - set(tasks))
    if unknown:
        raise UnknownTask(f"DAG {structure.dag_id!r} has no task {unknown[0]!r}")
    whole = {t for t in targets if isinstance(t, str)}
    whole |= relatives(tasks, named, scope.upstream, scope.downstream) - named
    pinned = [t for t in targets if not isinstance(t, str) and t[0] not in whole]
    parts: list[ColumnElement[bool]] = [TaskInstance.task_id.in_(sorted(whole))]
    parts += [and_(TaskInstance.task_id == t, TaskInstance.map_index == i) for t, i in pinned]
    return or_(*parts)


def _run_window(session: Session, dag_id: str, runs: Runs, scope: Scope) -> ColumnElement[bool]:
    """The WHERE part choosing the runs: the named one (and its past/future), or the window."""
    if runs.run_id is None:
        where = DagRun.dag_id == dag_id
        if runs.start is not None:
            where = and_(where, DagRun.logical_date >= runs.start)
        if runs.end is not None:
            where = and_(where, DagRun.logical_date <= runs.end)
        return where
    run = session.scalar(
        select(DagRun).where(DagRun.dag_id == dag_id, DagRun.run_id == runs.run_id)
    )
    if run is None:
        raise NotFound(f"DAG {dag_id!r} has no run {runs.run_id!r}")
    if not (scope.past or scope.future):
        return DagRun.id == run.id
    if run.logical_date is None:
        raise BadScope(f"run {runs.run_id!r} has no logical date: past and future need one")
    where = DagRun.dag_id == dag_id
    if not scope.past:
        where = and_(where, DagRun.logical_date >= run.logical_date)
    if not scope.future:
        where = and_(where, DagRun.logical_date <= run.logical_date)
    return or_(DagRun.id == run.id, where)


def _load(
    session: Session,
    runs_where: ColumnElement[bool],
    tis_where: ColumnElement[bool] | None,
    states: Iterable[TaskInstanceState],
) -> list[tuple[TaskInstance, DagRun]]:
    query = (
        select(TaskInstance, DagRun)
        .join(
            DagRun, and_(DagRun.dag_id == TaskInstance.dag_id, DagRun.run_id == TaskInstance.run_id)
        )
        .where(runs_where, TaskInstance.state.in_(sorted(states)))
        .order_by(DagRun.logical_date, DagRun.id, TaskInstance.task_id, TaskInstance.map_index)
        .limit(MAX_CHANGES + 1)
        # A row this session loaded earlier may be stale: plan from what is stored now.
        .execution_options(populate_existing=True)
    )
    if tis_where is not None:
        query = query.where(tis_where)
    rows = [(ti, run) for ti, run in session.execute(query)]
    if len(rows) > MAX_CHANGES:
        raise BadScope(f"this would change more than {MAX_CHANGES:,} task instances: narrow it")
    return rows


def plan_clear(
    session: Session, dag_id: str, runs: Runs, targets: Sequence[Target] | None, scope: Scope
) -> Plan:
    """What a clear of ``targets`` (None: every task) in ``runs`` under ``scope`` resets,
    through ``ExternalTaskMarker``s too (raises ``MarkerDepthExceeded`` past their depth)."""
    structure = structure_of(get_dag_model(session, dag_id))
    found = _load(
        session,
        _run_window(session, dag_id, runs, scope),
        _selector(structure, targets, scope),
        scope.states(CLEARABLE),
    )
    changes = [Change(ti, run, TI.NONE) for ti, run in found]
    seen = {change.ti.id for change in changes}
    by_run: dict[int, tuple[DagRun, list[str]]] = {}
    for change in changes:
        by_run.setdefault(change.run.id, (change.run, []))[1].append(change.ti.task_id)
    for run, task_ids in by_run.values():
        changes += _through_markers(session, run, structure.tasks, task_ids, MarkerHop(), seen)
    return Plan("clear", tuple(changes))


def _through_markers(
    session: Session,
    run: DagRun,
    tasks: Mapping[str, TaskSpec],
    task_ids: Sequence[str],
    hop: MarkerHop,
    seen: set[int],
) -> list[Change]:
    """The task instances the markers among ``task_ids`` clear in other runs, recursively."""
    changes: list[Change] = []
    for marked in marked_clears(session, run, tasks, task_ids, hop):
        other = structure_of(get_dag_model(session, marked.run.dag_id)).tasks
        where = TaskInstance.task_id.in_(marked.task_ids)
        rows = _load(session, DagRun.id == marked.run.id, where, CLEARABLE)
        fresh = [Change(ti, r, TI.NONE) for ti, r in rows if ti.id not in seen]
        seen.update(change.ti.id for change in fresh)
        changes += fresh
        ids = [change.ti.task_id for change in fresh]
        changes += _through_markers(session, marked.run, other, ids, marked.hop, seen)
    return changes


def plan_mark(
    session: Session,
    dag_id: str,
    run_id: str,
    targets: Sequence[Target],
    scope: Scope,
    state: TaskInstanceState,
) -> Plan:
    """What marking ``targets`` of a run ``state`` under ``scope`` changes (those already in
    ``state``, or removed, are left out)."""
    if state not in (TI.SUCCESS, TI.FAILED, TI.SKIPPED):
        raise BadScope(f"a task instance can be marked success, failed or skipped, not {state}")
    structure = structure_of(get_dag_model(session, dag_id))
    states = scope.states(set(TI) - {state, TI.REMOVED})
    where = _run_window(session, dag_id, Runs(run_id), scope)
    found = _load(session, where, _selector(structure, targets, scope), states)
    return Plan("mark", tuple(Change(ti, run, state) for ti, run in found))


def plan_targets(session: Session, dag_id: str, run_id: str, targets: Sequence[Target]) -> Plan:
    """The targets' task instances in a run as they are: a plan that changes nothing."""
    structure = structure_of(get_dag_model(session, dag_id))
    where = _run_window(session, dag_id, Runs(run_id), Scope())
    found = _load(session, where, _selector(structure, targets, Scope()), set(TI))
    return Plan("mark", tuple(Change(ti, run, TI(ti.state)) for ti, run in found))


def plan_run_mark(session: Session, runs: Sequence[DagRun], state: DagRunState) -> Plan:
    """What marking whole runs ``state`` changes: success marks their unfinished task instances
    success; failed fails the running and queued ones and skips those not started."""
    if state not in (DagRunState.SUCCESS, DagRunState.FAILED, DagRunState.QUEUED):
        raise BadScope(f"a run can be marked success, failed or queued, not {state}")
    unfinished = sorted(s for s in TI if s not in FINISHED)
    changes: list[Change] = []
    moving = [run for run in runs if run.state != state]
    if moving and state != DagRunState.QUEUED:
        where = DagRun.id.in_([run.id for run in moving])
        for ti, run in _load(session, where, None, unfinished):
            changes.append(Change(ti, run, _run_mark_to(TI(ti.state), state)))
    return Plan("mark", tuple(changes), tuple((run, state) for run in moving))


def _run_mark_to(current: TaskInstanceState, state: DagRunState) -> TaskInstanceState:
    if state == DagRunState.SUCCESS:
        return TI.SUCCESS
    return TI.FAILED if current in (TI.RUNNING, TI.QUEUED) else TI.SKIPPED


def apply_plan(
    session: Session,
    plan: Plan,
    by: str | None,
    purgers: Purgers | None = None,
    reset_dag_runs: bool = True,
    keep_state: bool = False,
) -> list[TaskInstance]:
    """Carry ``plan`` out; returns those of its task instances that moved, as they are now.

    ``by``: the user acting (None if not known), for the event log. ``keep_state``: a clear
    keeps the task instances' state-store values (their XComs go in any case). A task instance
    another writer moved since the plan was made is left as that writer left it.
    """
    del by  # recorded by the event log, once it exists
    purge = purgers or Purgers()
    for run, state in plan.runs_marked:
        mark_run_state(session, run, state)
    for run, changes in ({} if plan.runs_marked else _by_run(plan.changes)).items():
        tis = [change.ti for change in changes]
        if plan.action == "clear":
            tasks = structure_of(get_dag_model(session, run.dag_id)).tasks
            reset_task_instances(
                session, run, tis, tasks, keep_state, purge.xcoms, purge.states, reset_dag_runs
            )
        else:
            mark_task_instances(session, run, tis, changes[0].to_state)
    for change in plan.changes:
        session.refresh(change.ti)
    return [change.ti for change in plan.changes if change.ti.state == change.to_state]


def _by_run(changes: Sequence[Change]) -> dict[DagRun, list[Change]]:
    grouped: dict[DagRun, list[Change]] = {}
    for change in changes:
        grouped.setdefault(change.run, []).append(change)
    return grouped
