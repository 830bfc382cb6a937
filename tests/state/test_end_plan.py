"""The planner of a try's end: each plan variant, decided from the structure alone (no database)."""

from __future__ import annotations

from typing import Any

from state.core.structure import DagStructure, parse_structure
from state.engine.end_plan import (
    FirstWaiting,
    FullPass,
    SkipDownstream,
    Successor,
    holding_back,
    plan_end,
    skipped_by,
)


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


# --- Airflow 3's other trigger rules, branches and short circuits --------------------------


def test_a_successor_any_one_success_makes_ready_is_never_held_back() -> None:
    for rule in ("one_success", "one_done", "always"):
        lone = dag(a={}, b={"upstream": ["a"], "trigger_rule": rule})
        assert plan_end(lone, "a", succeeded=True) == Successor("b", then=FullPass("b"))
        join = dag(a={}, b={}, j={"upstream": ["a", "b"], "trigger_rule": rule})
        assert holding_back(join, "a") is None
        assert plan_end(join, "a", succeeded=True) == FullPass("j")


def test_a_successor_one_success_skips_is_decided_by_the_pass() -> None:
    for rule in ("all_failed", "all_skipped"):
        structure = dag(a={}, b={"upstream": ["a"], "trigger_rule": rule})
        assert plan_end(structure, "a", succeeded=True) == FullPass("b")


def test_joins_under_the_rules_that_wait_for_every_upstream_hold_them_back() -> None:
    for rule in (
        "all_done_min_one_success",
        "all_done_setup_success",
        "none_failed_min_one_success",
        "none_skipped",
    ):
        structure = dag(a={}, b={}, j={"upstream": ["a", "b"], "trigger_rule": rule})
        assert holding_back(structure, "a") == ("a", "b"), rule


BRANCHING = {
    "pick": {"kind": "branch"},
    "left": {"upstream": ["pick"]},
    "right": {"upstream": ["pick"]},
    "after_right": {"upstream": ["right"]},
    "join": {"upstream": ["pick", "left"], "trigger_rule": "none_failed_min_one_success"},
}


def test_a_branch_skips_the_direct_downstream_tasks_it_did_not_follow() -> None:
    structure = dag(**{k: dict(v) for k, v in BRANCHING.items()})
    plan = plan_end(structure, "pick", succeeded=True, follow=("left",))
    # join is downstream of left, which the branch follows: an empty branch's join runs.
    assert plan == SkipDownstream(("right",))
    assert plan_end(structure, "pick", succeeded=True, follow=()) == SkipDownstream(
        ("left", "right", "join")
    )
    assert plan_end(structure, "pick", succeeded=True, follow=("right",)) == SkipDownstream(
        ("left", "join")
    )


def test_a_branch_that_failed_or_chose_nothing_yet_takes_the_ordinary_plans() -> None:
    structure = dag(**{k: dict(v) for k, v in BRANCHING.items()})
    assert plan_end(structure, "pick", succeeded=False, follow=None) == FullPass()
    assert plan_end(structure, "pick", succeeded=True) == FullPass()  # no choice sent


def test_a_branch_follows_a_task_group_by_its_id() -> None:
    raw = {
        "dag_id": "d",
        "tasks": {
            "pick": {"kind": "branch", "downstream": ["g.a", "other"]},
            "g.a": {"upstream": ["pick"], "group": "g"},
            "other": {"upstream": ["pick"]},
        },
        "groups": {"g": {"tasks": ["g.a"]}},
    }
    plan = plan_end(parse_structure(raw), "pick", succeeded=True, follow=("g",))
    assert plan == SkipDownstream(("other",))


def short_circuit(ignore: bool) -> DagStructure:
    return dag(
        gate={"kind": "short_circuit", "ignore_downstream_trigger_rules": ignore},
        a={"upstream": ["gate"]},
        b={"upstream": ["a"], "trigger_rule": "all_done"},
        clean={"upstream": ["b"], "is_teardown": True},
    )


def test_a_short_circuit_skips_everything_downstream_but_teardowns() -> None:
    plan = plan_end(short_circuit(ignore=True), "gate", succeeded=True, follow=())
    assert plan == SkipDownstream(("a", "b"))


def test_a_short_circuit_that_respects_trigger_rules_skips_its_direct_downstream() -> None:
    plan = plan_end(short_circuit(ignore=False), "gate", succeeded=True, follow=())
    assert plan == SkipDownstream(("a",))
    assert skipped_by(short_circuit(ignore=False), "gate", ("go",)) == ()
    # A truthy result sends no choice: the ordinary plan.
    assert plan_end(short_circuit(ignore=False), "gate", succeeded=True) == Successor(
        "a", then=FullPass("a")
    )
