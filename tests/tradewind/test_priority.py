"""Weights, pool slots and per-task caps as a DAG file gives them: checked, and in the structure."""

from __future__ import annotations

import pytest

from tradewind import DAG, PriorityWeightStrategy, WeightRule, task
from tradewind.exceptions import DagDefinitionError
from tradewind.priority import WEIGHT_MAX


@task
def step() -> None:
    pass


def weights(built: DAG) -> dict[str, int]:
    return {t: spec.get("priority_weight", 1) for t, spec in built.structure()["tasks"].items()}


def test_downstream_weights_count_each_task_below_once() -> None:
    # A diamond: d is below a by two paths and counts once.
    with DAG("diamond") as built:
        a, b, c = (step.override(task_id=t)() for t in "abc")
        d = step.override(task_id="d", priority_weight=10)()
        a >> [b, c]
        [b, c] >> d

    assert weights(built) == {"a": 13, "b": 11, "c": 11, "d": 10}


def test_upstream_and_absolute_rules() -> None:
    with DAG("rules", default_args={"weight_rule": "upstream"}) as built:
        a = step.override(task_id="a", priority_weight=3)()
        b = step.override(task_id="b")()
        c = step.override(task_id="c", weight_rule=WeightRule.ABSOLUTE, priority_weight=7)()
        a >> b >> c

    assert weights(built) == {"a": 3, "b": 4, "c": 7}


def chain(dag_id: str, length: int, weight: int) -> DAG:
    with DAG(dag_id) as built:
        previous = step.override(task_id="t0", priority_weight=weight)()
        for index in range(1, length):
            current = step.override(task_id=f"t{index}", priority_weight=weight)()
            previous >> current
            previous = current
    return built


def test_a_long_chain_weighs_its_length_and_a_sum_past_32_bits_is_held() -> None:
    assert weights(chain("long", 2000, 1))["t0"] == 2000
    found = weights(chain("heavy", 3, 2**30))
    assert (found["t2"], found["t1"], found["t0"]) == (2**30, WEIGHT_MAX, WEIGHT_MAX)


def test_the_slot_keys_appear_only_when_set() -> None:
    with DAG("plain") as plain:
        step()
    with DAG("slotted") as slotted:
        step.override(pool_slots=2, max_active_tis_per_dag=3, max_active_tis_per_dagrun=1)()

    assert (
        plain.structure()["tasks"]["step"]
        .keys()
        .isdisjoint(
            {"priority_weight", "pool_slots", "max_active_tis_per_dag", "max_active_tis_per_dagrun"}
        )
    )
    assert (
        slotted.structure()["tasks"]["step"].items()
        >= {
            "pool_slots": 2,
            "max_active_tis_per_dag": 3,
            "max_active_tis_per_dagrun": 1,
        }.items()
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"priority_weight": "high"}, "priority_weight must be an integer, got 'high'"),
        ({"priority_weight": True}, "priority_weight must be an integer, got True"),
        ({"pool_slots": 1.5}, "pool_slots must be an integer >= 1, got 1.5"),
        ({"max_active_tis_per_dagrun": -1}, "max_active_tis_per_dagrun must be None or an int"),
        ({"weight_rule": "Downstream"}, "weight_rule 'Downstream' is not one of: downstream"),
    ],
)
def test_bad_values_are_refused_in_one_line(options: dict[str, object], message: str) -> None:
    with pytest.raises(DagDefinitionError, match=message):
        task(**options)(lambda: None)


def test_a_custom_weight_strategy_is_refused_naming_what_to_use() -> None:
    class Decreasing(PriorityWeightStrategy):
        def get_weight(self, ti: object) -> int:
            return 1

    with pytest.raises(DagDefinitionError, match="custom PriorityWeightStrategy is not supported"):
        task(weight_rule=Decreasing())(lambda: None)
