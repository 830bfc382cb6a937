"""Authoring control flow: every Airflow 3 trigger rule, @task.branch / @task.short_circuit and
@setup / @teardown, as the structure the scheduler reads."""

from __future__ import annotations

from typing import Any

import pytest

from tradewind import (
    DAG,
    BranchError,
    DagDefinitionError,
    TriggerRule,
    dag,
    setup,
    task,
    task_group,
    teardown,
)
from worker.task_runner.runner import succeed_message

AIRFLOW_3_RULES = [
    "all_success",
    "all_failed",
    "all_done",
    "all_done_min_one_success",
    "all_done_setup_success",
    "all_skipped",
    "one_success",
    "one_failed",
    "one_done",
    "none_failed",
    "none_failed_min_one_success",
    "none_skipped",
    "always",
]


@task
def noop() -> None:
    pass


def tasks_of(built: DAG) -> dict[str, Any]:
    tasks: dict[str, Any] = built.structure()["tasks"]
    return tasks


@pytest.mark.parametrize("rule", AIRFLOW_3_RULES)
def test_every_airflow_3_trigger_rule_is_accepted(rule: str) -> None:
    with DAG("rules") as built:
        noop() >> noop.override(trigger_rule=rule)()
    assert tasks_of(built)["noop__1"]["trigger_rule"] == rule
    assert TriggerRule(rule) == rule


def test_the_rules_decided_are_the_rules_authored() -> None:
    from state.engine.readiness import RULES

    assert set(RULES) == {str(rule) for rule in TriggerRule} == set(AIRFLOW_3_RULES)


# --- branching ------------------------------------------------------------------------------


@task.branch
def pick(which: Any) -> Any:
    return which


def branching(which: Any) -> DAG:
    @dag(dag_id="branching")
    def build() -> None:
        chosen = pick(which)
        chosen >> [noop.override(task_id="left")(), noop.override(task_id="right")()]

    return build()


def test_a_branch_is_marked_in_the_structure() -> None:
    tasks = tasks_of(branching("left"))
    assert tasks["pick"]["kind"] == "branch"
    assert "kind" not in tasks["left"]


@pytest.mark.parametrize(
    ("result", "follow"),
    [("left", ("left",)), (["left", "right"], ("left", "right")), (None, ())],
    ids=str,
)
def test_a_branch_sends_the_ids_it_returned_with_its_success(result: Any, follow: Any) -> None:
    built = branching(result)
    assert succeed_message(built.get_task("pick"), result).follow == list(follow)


def test_a_branch_returning_an_unknown_task_id_fails_with_one_line_naming_it() -> None:
    built = branching("nope")
    with pytest.raises(BranchError) as raised:
        succeed_message(built.get_task("pick"), "nope")
    message = str(raised.value)
    assert "\n" not in message
    assert "'nope'" in message and "left, right" in message


def test_a_branch_returning_something_else_than_ids_fails_with_one_line() -> None:
    built = branching(3)
    with pytest.raises(BranchError, match="must return a task id, a list of task ids or None"):
        succeed_message(built.get_task("pick"), 3)


def test_a_mapped_branch_is_refused_at_import() -> None:
    with pytest.raises(DagDefinitionError, match=r"mapped @task\.branch"), DAG("mapped"):
        pick.expand(which=["a", "b"])


def test_a_branch_keeps_its_kind_through_override() -> None:
    with DAG("over") as built:
        pick.override(task_id="choose", retries=1)("x") >> noop()
    assert tasks_of(built)["choose"]["kind"] == "branch"


@pytest.mark.parametrize("ignore", [True, False])
def test_a_short_circuit_carries_ignore_downstream_trigger_rules(ignore: bool) -> None:
    @task.short_circuit(ignore_downstream_trigger_rules=ignore)
    def gate() -> bool:
        return False

    with DAG("gated") as built:
        gate() >> noop()
    spec = tasks_of(built)["gate"]
    assert (spec["kind"], spec["ignore_downstream_trigger_rules"]) == ("short_circuit", ignore)
    assert succeed_message(built.get_task("gate"), 0).follow == []
    assert succeed_message(built.get_task("gate"), "yes").follow is None


# --- setup and teardown ---------------------------------------------------------------------


@setup
def make() -> str:
    return "cluster"


@teardown
def remove(cluster: str | None = None) -> None:
    pass


def test_setup_and_teardown_decorators_mark_the_tasks() -> None:
    with DAG("roles") as built:
        remove(make())
    tasks = tasks_of(built)
    assert tasks["make"]["is_setup"] and "is_teardown" not in tasks["make"]
    assert tasks["remove"]["is_teardown"]
    assert tasks["remove"]["trigger_rule"] == "all_done_setup_success"
    assert "on_failure_fail_dagrun" not in tasks["remove"]


def test_a_teardown_may_fail_the_run_when_asked() -> None:
    @teardown(on_failure_fail_dagrun=True)
    def strict() -> None:
        pass

    with DAG("strict") as built:
        strict()
    assert tasks_of(built)["strict"]["on_failure_fail_dagrun"]


def test_a_teardown_with_another_trigger_rule_is_refused() -> None:
    refused = pytest.raises(DagDefinitionError, match="trigger_rule must be all_done_setup_")
    with refused, DAG("bad"):
        remove.override(trigger_rule="one_failed")()


def test_as_teardown_marks_both_and_links_the_setup_to_the_teardown() -> None:
    with DAG("methods") as built:
        first, second, third = noop(), noop(), noop()
        first >> second >> third.as_teardown(setups=first)
    tasks = tasks_of(built)
    assert tasks["noop"]["is_setup"] and tasks["noop__2"]["is_teardown"]
    assert sorted(tasks["noop__2"]["upstream"]) == ["noop", "noop__1"]
    assert tasks["noop__2"]["trigger_rule"] == "all_done_setup_success"


def test_as_setup_marks_a_task() -> None:
    with DAG("as_setup") as built:
        noop().as_setup() >> noop()
    assert tasks_of(built)["noop"]["is_setup"]


def test_with_a_teardown_wires_the_work_made_inside_between_setup_and_teardown() -> None:
    @task
    def work(cluster: str | None = None) -> None:
        pass

    @task_group
    def section() -> None:
        made = make.override(task_id="inner_make")()
        work.override(task_id="inner_work")(made) >> remove.override(task_id="inner_remove")(made)

    with DAG("scoped") as built:
        with remove(make()):
            work()
            section()
        work.override(task_id="outside")()
    tasks = tasks_of(built)
    assert sorted(tasks["work"]["upstream"]) == ["make"]
    assert sorted(tasks["remove"]["upstream"]) == ["make", "section.inner_remove", "work"]
    assert tasks["section.inner_make"]["upstream"] == ["make"]
    assert tasks["outside"]["upstream"] == []


def test_with_a_plain_task_is_refused() -> None:
    refused = pytest.raises(DagDefinitionError, match="needs a setup or a teardown")
    with refused, DAG("plain"), noop():
        pass
