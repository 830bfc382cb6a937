"""Task groups, ``chain``, ``cross_downstream`` and edge labels, as Airflow 3 defines them."""

from __future__ import annotations

import pytest

from tradewind import (
    DAG,
    DagDefinitionError,
    Label,
    TaskGroup,
    chain,
    cross_downstream,
    task,
    task_group,
)
from tradewind.loader import one_line_error


@task
def step(value: int = 0) -> int:
    return value


def ups(built: DAG, task_id: str) -> set[str]:
    return built.get_task(task_id).upstream_task_ids


def test_tasks_in_a_group_have_its_prefix_and_groups_nest() -> None:
    with DAG("grouped") as built, TaskGroup("outer", ui_color="#fff"):
        step()
        with TaskGroup("inner"):
            step()
            step()

    assert set(built.tasks) == {"outer.step", "outer.inner.step", "outer.inner.step__1"}
    groups = built.structure()["groups"]
    assert groups["outer.inner"]["parent"] == "outer"
    assert groups["outer"]["ui_color"] == "#fff"
    assert groups["outer.inner"]["tasks"] == ["outer.inner.step", "outer.inner.step__1"]
    assert built.structure()["tasks"]["outer.inner.step"]["group"] == "outer.inner"
    assert built.structure()["tasks"]["outer.inner.step"]["label"] == "step"


def test_a_group_stands_for_its_roots_downstream_and_its_leaves_upstream() -> None:
    with DAG("edges") as built:
        start = step.override(task_id="start")()
        with TaskGroup("g") as group:
            a = step.override(task_id="a")()
            b = step.override(task_id="b")(a)
            step.override(task_id="c")(a)
        end = step.override(task_id="end")()
        start >> group >> end

    assert ups(built, "g.a") == {"start"}
    assert ups(built, "g.b") == {"g.a"}
    assert ups(built, "end") == {"g.b", "g.c"}
    assert b.task.downstream_task_ids == {"end"}


def test_groups_depend_on_groups_and_on_lists() -> None:
    with DAG("lists") as built:
        with TaskGroup("one") as one:
            step()
        with TaskGroup("two") as two:
            step()
        last = step.override(task_id="last")()
        [one, two] >> last
        one >> two

    assert ups(built, "last") == {"one.step", "two.step"}
    assert ups(built, "two.step") == {"one.step"}


def test_task_group_decorator_returns_the_group_or_what_the_function_returns() -> None:
    @task_group
    def section(value: int) -> None:
        """Three steps."""
        step(step(value))

    @task_group(group_id="chained")
    def returning(value: int):
        return step(value)

    with DAG("decorated") as built:
        start = step.override(task_id="start")()
        for i in range(2):
            start >> section(i)
        returned = returning(1)

    assert {"section.step", "section.step__1", "section__1.step", "section__1.step__1"} <= set(
        built.tasks
    )
    assert ups(built, "section__1.step") == {"start"}
    assert returned.task.task_id == "chained.step"
    assert built.task_groups["section"].tooltip == "Three steps."


def test_a_duplicate_group_id_is_refused() -> None:
    with DAG("dup"):
        with TaskGroup("g"):
            step()
        with pytest.raises(DagDefinitionError, match="duplicate task group id 'g'"):
            TaskGroup("g")


def test_group_default_args_apply_under_the_tasks_own() -> None:
    with DAG("defaults", default_args={"retries": 1, "queue": "dag"}) as built:
        with TaskGroup("g", default_args={"retries": 4}):
            step()
            step.override(retries=2)()
        step()

    assert built.get_task("g.step").options.retries == 4
    assert built.get_task("g.step").options.queue == "dag"
    assert built.get_task("g.step__1").options.retries == 2
    assert built.get_task("step").options.retries == 1


def test_a_cycle_through_a_group_is_one_line_naming_it() -> None:
    with DAG("loop") as built:
        outside = step.override(task_id="outside")()
        with TaskGroup("g") as group:
            step()
        outside >> group >> outside

    with pytest.raises(DagDefinitionError) as error:
        built.validate()
    line = one_line_error(error.value)
    assert "\n" not in line
    assert "cycle (through task group g)" in line


def test_chain_links_in_order_and_pairs_lists_of_one_length() -> None:
    with DAG("chained") as built:
        a, b, c, d, e = (step.override(task_id=n)() for n in "abcde")
        chain(a, [b, c], [d, e])

    assert ups(built, "b") == ups(built, "c") == {"a"}
    assert ups(built, "d") == {"b"}
    assert ups(built, "e") == {"c"}


def test_chain_refuses_lists_of_different_lengths() -> None:
    with DAG("bad_chain"):
        a, b, c = (step.override(task_id=n)() for n in "abc")
        with pytest.raises(DagDefinitionError, match="same length"):
            chain([a, b], [c])


def test_cross_downstream_links_every_pair() -> None:
    with DAG("crossed") as built:
        a, b, c, d = (step.override(task_id=n)() for n in "abcd")
        cross_downstream([a, b], [c, d])

    assert ups(built, "c") == ups(built, "d") == {"a", "b"}


def test_an_edge_label_makes_the_dependency_and_is_kept() -> None:
    with DAG("labelled") as built:
        a, b, c = (step.override(task_id=n)() for n in "abc")
        a >> Label("when ready") >> [b, c]
        c << Label("also") << b

    assert ups(built, "b") == {"a"}
    assert ups(built, "c") == {"a", "b"}
    tasks = built.structure()["tasks"]
    assert tasks["b"]["upstream_labels"] == {"a": "when ready"}
    assert tasks["c"]["upstream_labels"] == {"a": "when ready", "b": "also"}


def test_something_else_than_a_task_cannot_be_a_dependency() -> None:
    with DAG("odd"):
        a = step()
        with pytest.raises(DagDefinitionError, match="cannot depend on 3"):
            a >> 3


def test_a_group_given_its_dag_takes_tasks_outside_the_dag_block() -> None:
    built = DAG("later")
    with TaskGroup("g", dag=built):
        step()

    assert set(built.tasks) == {"g.step"}


def test_a_group_without_prefix_keeps_its_tasks_ids() -> None:
    with DAG("bare") as built, TaskGroup("g", prefix_group_id=False):
        step()

    assert set(built.tasks) == {"step"}
    assert built.get_task("step").group_id == "g"
