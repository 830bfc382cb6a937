"""The planner of a try's end: each plan variant, decided from the structure alone (no database)."""

from __future__ import annotations

from typing import Any

from state.end_plan import FirstWaiting, FullPass, Successor, holding_back, plan_end
from state.structure import DagStructure, parse_structure


def dag(**tasks: dict[str, Any]) -> DagStructure:
    """A structure whose ``downstream`` lists are derived from the ``upstream`` ones."""
    for task_id, spec in tasks.items():
        spec.setdefault("upstream", [])
        spec["downstream"] = [
            other for other, o in tasks.items() if task_id in o.get("upstream", [])
        ]
    return parse_structure({"dag_id": "d", "tasks": tasks})


MAPPED = {"kind": "expand", "sources": {"x": {"task_id": "items"}}}


def test_a_task_with_nothing_downstream_hands_its_slot_to_any_waiting_try() -> None:
    structure = dag(a={}, b={})
    assert plan_end(structure, "a", succeeded=True) == FirstWaiting()
    assert plan_end(structure, "a", succeeded=False) == FirstWaiting()  # a failure frees it too


def test_a_chain_queues_its_successor_by_name_and_passes_when_it_cannot() -> None:
    structure = dag(a={}, b={"upstream": ["a"]}, c={"upstream": ["b"]})
    assert plan_end(structure, "a", succeeded=True) == Successor("b", then=FullPass("b"))


def test_a_failure_with_downstream_takes_the_full_pass() -> None:
    structure = dag(a={}, b={"upstream": ["a"]})
    assert plan_end(structure, "a", succeeded=False) == FullPass()


def test_a_successor_in_another_pool_or_mapped_is_left_to_the_pass() -> None:
    other_pool = dag(a={}, b={"upstream": ["a"], "pool": "solo"})
    assert plan_end(other_pool, "a", succeeded=True) == FullPass()
    mapped = dag(items={}, b={"upstream": ["items"], "mapping": MAPPED})
    assert plan_end(mapped, "items", succeeded=True) == FullPass()


def test_a_successor_one_success_does_not_make_ready_is_decided_from_its_rows() -> None:
    alert = dag(a={}, alert={"upstream": ["a"], "trigger_rule": "one_failed"})
    assert plan_end(alert, "a", succeeded=True) == FullPass("alert")


def test_a_join_hands_its_slot_to_another_upstream_then_passes_on_the_successor() -> None:
    structure = dag(a={}, b={}, c={}, join={"upstream": ["a", "b", "c"]})
    plan = plan_end(structure, "a", succeeded=True)
    assert plan == FirstWaiting(("a", "b", "c"), then=FullPass("join"))


def test_a_map_index_hands_its_slot_to_the_next_one() -> None:
    structure = dag(
        items={}, double={"upstream": ["items"], "mapping": MAPPED}, total={"upstream": ["double"]}
    )
    assert plan_end(structure, "double", succeeded=True) == FirstWaiting(
        ("double",), then=FullPass("total")
    )


def test_every_rule_that_waits_for_all_its_upstreams_holds_them_back() -> None:
    for rule in ("all_success", "all_done", "none_failed", "one_failed"):
        structure = dag(a={}, b={}, join={"upstream": ["a", "b"], "trigger_rule": rule})
        assert holding_back(structure, "a") == ("a", "b"), rule


def test_a_lone_upstream_holds_nothing_back() -> None:
    structure = dag(a={}, b={"upstream": ["a"], "trigger_rule": "all_done"}, c={"upstream": ["a"]})
    assert holding_back(structure, "a") is None  # its one try is the one that ended
    assert plan_end(structure, "a", succeeded=True) == FullPass()


def test_a_task_not_in_this_version_takes_the_full_pass() -> None:
    assert plan_end(dag(a={}), "gone", succeeded=True) == FullPass()


def test_holding_back_is_computed_once_per_set_of_downstream_tasks() -> None:
    upstreams = {f"t{i}": {} for i in range(50)}
    structure = dag(**upstreams, join={"upstream": sorted(upstreams)})
    first = holding_back(structure, "t0")
    assert first == tuple(sorted(upstreams))
    assert holding_back(structure, "t1") == first
    assert sum(key[0] == "holding_back" for key in structure.memo) == 1
