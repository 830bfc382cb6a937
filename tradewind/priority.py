"""Which waiting task takes a free slot first, and how many it takes: Airflow's slot arguments.

``priority_weight`` and ``weight_rule`` give each task a total weight, computed here once when
the DAG's structure is built: the scheduler orders the task instances waiting for slots by it
(higher first), so it must be a number stored with each task instance, not code run per pass.

- ``downstream`` (the default): the task's own weight plus those of every task downstream of it,
  so the tasks that hold up most of the DAG start first;
- ``upstream``: its own plus those of every task upstream of it (a run near its end first);
- ``absolute``: its own weight alone.

``pool_slots`` is how many slots of its pool one of the task's instances takes;
``max_active_tis_per_dag`` and ``max_active_tis_per_dagrun`` cap its instances queued or running
across all runs of the DAG, and within one run.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from tradewind.exceptions import DagDefinitionError

#: Weights are stored as 32-bit integers; a sum beyond them is held at the bound, as Airflow does.
WEIGHT_MIN, WEIGHT_MAX = -(2**31), 2**31 - 1


class WeightRule(enum.StrEnum):
    """How a task's total weight is derived from its own and its relatives' ``priority_weight``."""

    DOWNSTREAM = "downstream"
    UPSTREAM = "upstream"
    ABSOLUTE = "absolute"


class PriorityWeightStrategy:
    """Airflow's base of a custom weight rule; a subclass runs code per task instance, which the
    scheduler here cannot do (weights are stored when the DAG is parsed): it is refused."""

    def get_weight(self, ti: Any) -> int:
        raise NotImplementedError


def weight_rule_of(value: Any) -> WeightRule:
    """``value`` as a ``WeightRule``; anything else (a custom strategy) refused in one line."""
    if isinstance(value, PriorityWeightStrategy) or callable(getattr(value, "get_weight", None)):
        raise DagDefinitionError(
            f"weight_rule {type(value).__name__}: a custom PriorityWeightStrategy is not "
            "supported; use 'downstream', 'upstream' or 'absolute'"
        )
    try:
        return WeightRule(value)
    except ValueError:
        raise DagDefinitionError(
            f"weight_rule {value!r} is not one of: downstream, upstream, absolute"
        ) from None


def check_slot_options(options: Any) -> None:
    """Refuse a bad ``priority_weight``, ``pool_slots`` or per-task cap, in one line each."""
    if not _is_int(options.priority_weight):
        raise DagDefinitionError(
            f"priority_weight must be an integer, got {options.priority_weight!r}"
        )
    options.weight_rule = weight_rule_of(options.weight_rule)
    if not _is_int(options.pool_slots) or options.pool_slots < 1:
        raise DagDefinitionError(f"pool_slots must be an integer >= 1, got {options.pool_slots!r}")
    for name in ("max_active_tis_per_dag", "max_active_tis_per_dagrun"):
        value = getattr(options, name)
        if value is not None and (not _is_int(value) or value < 1):
            raise DagDefinitionError(f"{name} must be None or an integer >= 1, got {value!r}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def total_weights(tasks: Mapping[str, Any], order: list[str]) -> dict[str, int]:
    """Each task's total weight under its own ``weight_rule`` (``tasks``: Task by id, ``order``:
    their ids, each after its upstream ones).

    Relatives are counted once each, however many paths lead to them, as in Airflow. They are
    kept as bit sets over ``order``: a chain of 2,000 tasks costs milliseconds, not a set each.
    """
    own = [tasks[task_id].options.priority_weight for task_id in order]
    rules = [tasks[task_id].options.weight_rule for task_id in order]
    relatives = {
        rule: _reachable(tasks, order, f"{rule}_task_ids")
        for rule in (WeightRule.DOWNSTREAM, WeightRule.UPSTREAM)
        if rule in rules
    }
    # The usual DAG: every task's own weight the same, so a count of relatives does.
    same = own[0] if len(set(own)) == 1 else None
    weights = {}
    for index, task_id in enumerate(order):
        reach = relatives.get(rules[index])
        extra = _sum_of(reach[index], own, same) if reach else 0
        weights[task_id] = max(WEIGHT_MIN, min(WEIGHT_MAX, own[index] + extra))
    return weights


def _reachable(tasks: Mapping[str, Any], order: list[str], direction: str) -> list[int]:
    """For each task of ``order``, the bit set of the tasks reachable following ``direction``."""
    position = {task_id: index for index, task_id in enumerate(order)}
    reach = [0] * len(order)
    walk = reversed(order) if direction == "downstream_task_ids" else iter(order)
    for task_id in walk:  # its relatives' sets are complete before its own
        bits = 0
        for other in getattr(tasks[task_id], direction):
            if other in position:
                bits |= reach[position[other]] | (1 << position[other])
        reach[position[task_id]] = bits
    return reach


def _sum_of(bits: int, own: list[int], same: int | None) -> int:
    if same is not None:
        return same * bits.bit_count()
    total, index = 0, 0
    while bits:
        if bits & 1:
            total += own[index]
        bits >>= 1
        index += 1
    return total


def slot_structure(task: Any, weight: int) -> dict[str, Any]:
    """The slot keys of a task's structure (``state.core.structure.TaskSpec``), each only when
    it is not the default: a DAG that uses none of them keeps its version hash."""
    options = task.options
    keys = {
        "priority_weight": (weight, 1),
        "pool_slots": (options.pool_slots, 1),
        "max_active_tis_per_dag": (options.max_active_tis_per_dag, None),
        "max_active_tis_per_dagrun": (options.max_active_tis_per_dagrun, None),
    }
    return {key: value for key, (value, default) in keys.items() if value != default}
