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
  downstream tasks expand, several successors are decided together). A one-successor pass first
  decides that task from its own rows and its upstreams', not the whole run's.

A hand-over that queues nothing is followed by the pass its plan names (``then``), in a
transaction of its own: the successor left ``none`` meanwhile, or this end was the last of a
join's upstreams.

The executor (``state.end``) carries the plan out; a new hand-over shape is a new variant here,
with its planner test. Why handing a slot over keeps every limit:
docs/decisions/one-end-path.md.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from state.enums import TaskInstanceState
from state.readiness import decide
from state.structure import DagStructure, TaskSpec

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


Plan = Successor | FirstWaiting | FullPass


def plan_end(structure: DagStructure, ended: str, succeeded: bool) -> Plan:
    """The plan for the end of a try of task ``ended`` (``succeeded``: it ended in success)."""
    spec = structure.tasks.get(ended)
    if spec is None:
        return FullPass()  # not in this version of the DAG: the pass removes or restores it
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
    """The one downstream task of ``spec``, if it is unmapped and in the same pool."""
    if len(spec.downstream) != 1:
        return None
    successor = structure.tasks.get(spec.downstream[0])
    if successor is None or successor.mapping is not None or successor.pool != spec.pool:
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


def plan_reschedule() -> Plan:
    """The plan for a sensor's try ended ``up_for_reschedule``: its slot is free and nothing
    downstream changed, so the run's first try waiting for a slot of its pool takes it."""
    return FirstWaiting()
