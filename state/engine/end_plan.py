"""How a try's end is recorded, decided from the DAG's structure alone: a plan, no database.

Every end frees a slot and may make downstream work ready. Reading the whole run after each end
would cost O(run) per try, so the planner picks the cheapest way that keeps every rule:

- ``Successor``: the ended task's one unmapped downstream task in its pool, which this success
  alone makes ready, is queued by name in the ended try's slot, in the end's own statement.
- ``FirstWaiting``: the slot goes to the run's first try waiting for one in the same pool. For a
  task with nothing downstream, any try of the run; for a success whose downstream tasks all wait
  for every one of their upstreams, a try of one of those upstreams (``among``): nothing
  downstream can be ready while one of them is unfinished.
- ``FullPass``: the end and a pass over the run, in one transaction (failures cascade, mapped
  downstream tasks expand, several successors are decided together, a DAG's tasks take other than
  one slot each or have caps of their own). A one-successor pass first
  decides that task from its own rows and its upstreams', not the whole run's.
- ``SkipDownstream``: a branch (``@task.branch``) or a short circuit that chose: the end, one
  statement skipping the tasks it did not follow, and a pass that lets the trigger rules carry
  the skips further, in one transaction. The skips are recorded with the end, never after it.

A hand-over that queues nothing is followed by the pass its plan names (``then``), in a
transaction of its own: the successor left ``none`` meanwhile, or this end was the last of a
join's upstreams.

The executor (``state.engine.end``) carries the plan out; a new hand-over shape is a new variant
here,
with its planner test. Why handing a slot over keeps every limit:
docs/decisions/one-end-path.md.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from state.core import DagStructure, TaskInstanceState, TaskSpec
from state.engine.readiness import decide

TI = TaskInstanceState


@dataclass(frozen=True)
class FullPass:
    """A pass over the run. ``successor``: the one task the pass may decide first from its own
    rows and its upstreams' (a full read of the run only if that does not settle it)."""

    successor: str | None = None


@dataclass(frozen=True)
class Successor:
    """The ended task's one successor, queued by name in its slot: this success alone makes it
    ready. ``then``: the pass when it could not be queued (it left ``none``, or tries wait)."""

    task_id: str
    then: FullPass


@dataclass(frozen=True)
class FirstWaiting:
    """The run's first try waiting for a slot of the ended try's pool takes it (``among``: a try
    of one of these tasks). ``then``: the pass when none waits (None: nothing to pass on)."""

    among: tuple[str, ...] | None = None
    then: FullPass | None = None


@dataclass(frozen=True)
class SkipDownstream:
    """A branch's or a short circuit's success: ``skip`` (task ids) go ``none -> skipped`` with
    the end, then a pass over the run decides what follows them by their trigger rules."""

    skip: tuple[str, ...]


Plan = Successor | FirstWaiting | FullPass | SkipDownstream


def plan_end(
    structure: DagStructure,
    ended: str,
    succeeded: bool,
    follow: tuple[str, ...] | None = None,
    writes_events: bool = False,
) -> Plan:
    """The plan for the end of a try of task ``ended`` (``succeeded``: it ended in success).

    ``follow``: what a branch or a short circuit chose (the task or group ids to run; an empty
    tuple: none); None for any other end. ``writes_events``: the end records asset events,
    which go in its own transaction (no hand-over statement carries them).
    """
    spec = structure.tasks.get(ended)
    if spec is None:
        return FullPass()  # not in this version of the DAG: the pass removes or restores it
    if succeeded and follow is not None and spec.kind != "task":
        return SkipDownstream(skipped_by(structure, ended, follow))
    if structure.capped:
        return FullPass()  # tries take other than one slot, or tasks are capped: a pass counts
    if writes_events:
        return FullPass(_single_successor(structure, spec))
    if not spec.downstream:
        return FirstWaiting()
    if not succeeded:
        return FullPass()  # a failure or a retry may cascade downstream
    successor = _single_successor(structure, spec)
    if successor is not None and _follows_only(structure, ended, successor):
        return Successor(successor, then=FullPass(successor))
    among = holding_back(structure, ended)
    if among:
        # The last of them to end finds none waiting: its success may make them ready.
        return FirstWaiting(among, then=FullPass(successor))
    return FullPass(successor)


def _single_successor(structure: DagStructure, spec: TaskSpec) -> str | None:
    """The one downstream task of ``spec``, if it is unmapped, in the same pool and waits for
    no previous run (only a full pass reads that: ``state.engine.past``)."""
    if len(spec.downstream) != 1:
        return None
    successor = structure.tasks.get(spec.downstream[0])
    if successor is None or successor.mapping is not None or successor.pool != spec.pool:
        return None
    if successor.depends_on_past:
        return None
    return spec.downstream[0]


def _follows_only(structure: DagStructure, ended: str, successor: str) -> bool:
    """Whether the success of ``ended`` alone makes ``successor`` ready: its one upstream,
    unmapped (one task instance), under a trigger rule that one success satisfies."""
    spec = structure.tasks[successor]
    if spec.upstream != (ended,) or structure.tasks[ended].mapping is not None:
        return False
    return decide(spec.trigger_rule, Counter({TI.SUCCESS: 1}), 1) == TI.SCHEDULED


def holding_back(structure: DagStructure, ended: str) -> tuple[str, ...] | None:
    """The tasks an unfinished try of which keeps every downstream task of ``ended`` waiting,
    whatever else succeeds: the upstreams they all share. None when the success of one try of
    ``ended`` could alone make one of them ready (what each one's trigger rule decides: here,
    one success among two upstream tries, the other unfinished, leaves all four rules waiting).

    Kept per set of downstream tasks: the 2,000 upstreams of a join share one answer.
    """
    downstream = structure.tasks[ended].downstream
    memo = structure.memo
    key = ("holding_back", downstream)
    if key not in memo:
        memo[key] = _holding_back(structure, downstream)
    shared: frozenset[str] | None = memo[key]
    if shared is None or (shared == {ended} and structure.tasks[ended].mapping is None):
        return None  # its one try is the one that ended: nothing else can hold them back
    return tuple(sorted(shared))


def _holding_back(structure: DagStructure, downstream: tuple[str, ...]) -> frozenset[str] | None:
    one_of_two = Counter({TI.SUCCESS: 1})
    specs = [structure.tasks[name] for name in downstream]
    if not specs or any(decide(spec.trigger_rule, one_of_two, 2) is not None for spec in specs):
        return None
    return frozenset.intersection(*(frozenset(spec.upstream) for spec in specs))


def skipped_by(structure: DagStructure, ended: str, follow: tuple[str, ...]) -> tuple[str, ...]:
    """The tasks a branch or short circuit that chose ``follow`` skips, as Airflow does.

    A branch skips its direct downstream tasks it did not follow (a group id follows the
    group's tasks), except those downstream of one it follows: the join of an empty branch
    runs. A short circuit that chose nothing skips its direct downstream tasks, or everything
    downstream with ``ignore_downstream_trigger_rules``; never a teardown.
    """
    spec = structure.tasks[ended]
    if spec.kind == "branch":
        followed = _downstream_of(structure, _tasks_named(structure, follow))
        return tuple(task for task in spec.downstream if task not in followed)
    if follow:
        return ()  # a truthy short circuit skips nothing
    skipped = (
        _downstream_of(structure, spec.downstream)
        if spec.ignore_downstream_trigger_rules
        else set(spec.downstream)
    )
    return tuple(sorted(t for t in skipped if not structure.tasks[t].is_teardown))


def _tasks_named(structure: DagStructure, ids: tuple[str, ...]) -> set[str]:
    named = {task_id for task_id in ids if task_id in structure.tasks}
    for group_id in ids:
        group = structure.groups.get(group_id)
        if group is not None:
            named.update(_tasks_in_group(structure, group_id))
    return named


def _tasks_in_group(structure: DagStructure, group_id: str) -> set[str]:
    tasks = set(structure.groups[group_id].tasks)
    for child_id, child in structure.groups.items():
        if child.parent == group_id:
            tasks |= _tasks_in_group(structure, child_id)
    return tasks


def _downstream_of(structure: DagStructure, roots: Iterable[str]) -> set[str]:
    """``roots`` and every task downstream of them."""
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        task_id = stack.pop()
        if task_id not in seen and task_id in structure.tasks:
            seen.add(task_id)
            stack.extend(structure.tasks[task_id].downstream)
    return seen


def plan_reschedule(structure: DagStructure) -> Plan:
    """The plan for a sensor's try ended ``up_for_reschedule``: its slot is free and nothing
    downstream changed, so the run's first try waiting for a slot of its pool takes it."""
    return FullPass() if structure.capped else FirstWaiting()
