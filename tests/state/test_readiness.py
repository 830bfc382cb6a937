"""Readiness under the trigger rules, and a run's outcome: pure functions over TI states."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from state.core.enums import FINISHED, TaskInstanceState
from state.core.structure import DagStructure, parse_structure
from state.engine.readiness import Decisions, TIRow, decide, evaluate, run_outcome
from tradewind.trigger_rules import TriggerRule

TI = TaskInstanceState
IN_PROGRESS = [TI.NONE, TI.SCHEDULED, TI.QUEUED, TI.RUNNING, TI.UP_FOR_RETRY]
UPSTREAM_STATES = [TI.SUCCESS, TI.FAILED, TI.SKIPPED, TI.UPSTREAM_FAILED, *IN_PROGRESS]
RULES = [str(rule) for rule in TriggerRule]

# Where a task goes when its one upstream is in a given state (None: it keeps waiting): every
# Airflow 3 rule, upstream success / failed / upstream_failed / skipped.
ONE_UPSTREAM: dict[str, dict[TaskInstanceState, TaskInstanceState | None]] = {
    "all_success": {
        TI.SUCCESS: TI.SCHEDULED,
        TI.FAILED: TI.UPSTREAM_FAILED,
        TI.UPSTREAM_FAILED: TI.UPSTREAM_FAILED,
        TI.SKIPPED: TI.SKIPPED,
    },
    "all_failed": {
        TI.SUCCESS: TI.SKIPPED,
        TI.FAILED: TI.SCHEDULED,
        TI.UPSTREAM_FAILED: TI.SCHEDULED,
        TI.SKIPPED: TI.SKIPPED,
    },
    "all_done": {
        TI.SUCCESS: TI.SCHEDULED,
        TI.FAILED: TI.SCHEDULED,
        TI.UPSTREAM_FAILED: TI.SCHEDULED,
        TI.SKIPPED: TI.SCHEDULED,
    },
    "all_done_min_one_success": {
        TI.SUCCESS: TI.SCHEDULED,
        TI.FAILED: TI.UPSTREAM_FAILED,
        TI.UPSTREAM_FAILED: TI.UPSTREAM_FAILED,
        TI.SKIPPED: TI.SKIPPED,
    },
    "all_done_setup_success": {
        TI.SUCCESS: TI.SCHEDULED,
        TI.FAILED: TI.SCHEDULED,
        TI.UPSTREAM_FAILED: TI.SCHEDULED,
        TI.SKIPPED: TI.SCHEDULED,
    },
    "all_skipped": {
        TI.SUCCESS: TI.SKIPPED,
        TI.FAILED: TI.SKIPPED,
        TI.UPSTREAM_FAILED: TI.SKIPPED,
        TI.SKIPPED: TI.SCHEDULED,
    },
    "one_success": {
        TI.SUCCESS: TI.SCHEDULED,
        TI.FAILED: TI.UPSTREAM_FAILED,
        TI.UPSTREAM_FAILED: TI.UPSTREAM_FAILED,
        TI.SKIPPED: TI.SKIPPED,
    },
    "one_failed": {
        TI.SUCCESS: TI.SKIPPED,
        TI.FAILED: TI.SCHEDULED,
        TI.UPSTREAM_FAILED: TI.SCHEDULED,
        TI.SKIPPED: TI.SKIPPED,
    },
    "one_done": {
        TI.SUCCESS: TI.SCHEDULED,
        TI.FAILED: TI.SCHEDULED,
        TI.UPSTREAM_FAILED: TI.SKIPPED,
        TI.SKIPPED: TI.SKIPPED,
    },
    "none_failed": {
        TI.SUCCESS: TI.SCHEDULED,
        TI.FAILED: TI.UPSTREAM_FAILED,
        TI.UPSTREAM_FAILED: TI.UPSTREAM_FAILED,
        TI.SKIPPED: TI.SCHEDULED,
    },
    "none_failed_min_one_success": {
        TI.SUCCESS: TI.SCHEDULED,
        TI.FAILED: TI.UPSTREAM_FAILED,
        TI.UPSTREAM_FAILED: TI.UPSTREAM_FAILED,
        TI.SKIPPED: TI.SKIPPED,
    },
    "none_skipped": {
        TI.SUCCESS: TI.SCHEDULED,
        TI.FAILED: TI.SCHEDULED,
        TI.UPSTREAM_FAILED: TI.SCHEDULED,
        TI.SKIPPED: TI.SKIPPED,
    },
    "always": {
        TI.SUCCESS: TI.SCHEDULED,
        TI.FAILED: TI.SCHEDULED,
        TI.UPSTREAM_FAILED: TI.SCHEDULED,
        TI.SKIPPED: TI.SCHEDULED,
    },
}
# `always` does not even wait for an upstream in progress.
ONE_UPSTREAM["always"].update(dict.fromkeys(IN_PROGRESS, TI.SCHEDULED))
CASES = [
    (rule, state, ONE_UPSTREAM[rule].get(state)) for rule in RULES for state in UPSTREAM_STATES
]


def test_the_table_covers_every_supported_rule() -> None:
    assert set(ONE_UPSTREAM) == set(RULES)


@pytest.mark.parametrize(("rule", "upstream", "expected"), CASES, ids=str)
def test_one_upstream(
    rule: str, upstream: TaskInstanceState, expected: TaskInstanceState | None
) -> None:
    assert decide(rule, Counter([upstream]), 1) == expected


@pytest.mark.parametrize(
    ("rule", "upstream", "expected"),
    [
        # all_success decides as soon as one upstream failed or skipped, as in Airflow...
        ("all_success", [TI.SUCCESS, TI.RUNNING], None),
        ("all_success", [TI.FAILED, TI.RUNNING], TI.UPSTREAM_FAILED),
        ("all_success", [TI.UPSTREAM_FAILED, TI.QUEUED], TI.UPSTREAM_FAILED),
        ("all_success", [TI.SKIPPED, TI.RUNNING], TI.SKIPPED),
        ("all_success", [TI.FAILED, TI.SKIPPED], TI.UPSTREAM_FAILED),
        ("all_success", [TI.SUCCESS, TI.SUCCESS, TI.SUCCESS], TI.SCHEDULED),
        # ...one_failed as soon as one failed...
        ("one_failed", [TI.FAILED, TI.RUNNING], TI.SCHEDULED),
        ("one_failed", [TI.SUCCESS, TI.RUNNING], None),
        ("one_failed", [TI.SUCCESS, TI.SKIPPED], TI.SKIPPED),
        # ...and the others wait for every upstream.
        ("all_done", [TI.FAILED, TI.RUNNING], None),
        ("all_done", [TI.SUCCESS, TI.FAILED, TI.SKIPPED], TI.SCHEDULED),
        ("none_failed", [TI.FAILED, TI.RUNNING], TI.UPSTREAM_FAILED),
        ("none_failed", [TI.SUCCESS, TI.SKIPPED], TI.SCHEDULED),
        ("none_failed", [TI.SUCCESS, TI.UP_FOR_RETRY], None),
        ("none_failed", [TI.SUCCESS, TI.FAILED], TI.UPSTREAM_FAILED),
        # The rules Airflow 3 adds, with several upstreams.
        ("all_failed", [TI.FAILED, TI.UPSTREAM_FAILED], TI.SCHEDULED),
        ("all_failed", [TI.FAILED, TI.RUNNING], None),
        ("all_failed", [TI.SUCCESS, TI.RUNNING], TI.SKIPPED),
        ("all_done_min_one_success", [TI.SUCCESS, TI.FAILED], TI.SCHEDULED),
        ("all_done_min_one_success", [TI.SUCCESS, TI.RUNNING], None),
        ("all_done_min_one_success", [TI.SKIPPED, TI.FAILED], TI.UPSTREAM_FAILED),
        ("all_done_min_one_success", [TI.SKIPPED, TI.SKIPPED], TI.SKIPPED),
        ("all_skipped", [TI.SKIPPED, TI.SKIPPED], TI.SCHEDULED),
        ("all_skipped", [TI.SKIPPED, TI.RUNNING], None),
        ("all_skipped", [TI.SUCCESS, TI.RUNNING], TI.SKIPPED),
        ("one_success", [TI.SUCCESS, TI.RUNNING], TI.SCHEDULED),
        ("one_success", [TI.FAILED, TI.RUNNING], None),
        ("one_success", [TI.FAILED, TI.SKIPPED], TI.UPSTREAM_FAILED),
        ("one_success", [TI.SKIPPED, TI.SKIPPED], TI.SKIPPED),
        ("one_done", [TI.FAILED, TI.RUNNING], TI.SCHEDULED),
        ("one_done", [TI.SKIPPED, TI.RUNNING], None),
        ("one_done", [TI.SKIPPED, TI.UPSTREAM_FAILED], TI.SKIPPED),
        ("none_failed_min_one_success", [TI.SUCCESS, TI.SKIPPED], TI.SCHEDULED),
        ("none_failed_min_one_success", [TI.SKIPPED, TI.SKIPPED], TI.SKIPPED),
        ("none_failed_min_one_success", [TI.SKIPPED, TI.RUNNING], None),
        ("none_failed_min_one_success", [TI.FAILED, TI.RUNNING], TI.UPSTREAM_FAILED),
        ("none_skipped", [TI.SUCCESS, TI.FAILED], TI.SCHEDULED),
        ("none_skipped", [TI.SKIPPED, TI.RUNNING], TI.SKIPPED),
        ("none_skipped", [TI.SUCCESS, TI.RUNNING], None),
        ("always", [TI.RUNNING, TI.NONE], TI.SCHEDULED),
    ],
    ids=str,
)
def test_several_upstreams(
    rule: str, upstream: list[TaskInstanceState], expected: TaskInstanceState | None
) -> None:
    assert decide(rule, Counter(upstream), len(upstream)) == expected


@pytest.mark.parametrize(
    ("rule", "expected"),
    [("all_success", TI.SCHEDULED), ("all_done", TI.SCHEDULED), ("none_failed", TI.SCHEDULED)],
)
def test_a_task_without_upstream_is_scheduled(rule: str, expected: TaskInstanceState) -> None:
    assert decide(rule, Counter(), 0) == expected


upstream_lists = st.lists(st.sampled_from(UPSTREAM_STATES), max_size=8)


@given(upstream=upstream_lists, rule=st.sampled_from(RULES))
def test_every_rule_decides_once_every_upstream_finished(
    upstream: list[TaskInstanceState], rule: str
) -> None:
    """No run can hang on a ``none`` task whose upstreams have all finished."""
    decision = decide(rule, Counter(upstream), len(upstream))
    assert decision in (None, TI.SCHEDULED, TI.UPSTREAM_FAILED, TI.SKIPPED)
    if all(state in FINISHED for state in upstream):
        assert decision is not None


@given(upstream=upstream_lists)
def test_all_success_waits_while_an_upstream_is_unfinished_unless_one_failed_or_skipped(
    upstream: list[TaskInstanceState],
) -> None:
    decision = decide("all_success", Counter(upstream), len(upstream))
    failed_or_skipped = {TI.FAILED, TI.UPSTREAM_FAILED, TI.SKIPPED} & set(upstream)
    unfinished = any(state not in FINISHED for state in upstream)
    if unfinished and not failed_or_skipped:
        assert decision is None
    if decision == TI.SCHEDULED:
        assert set(upstream) <= {TI.SUCCESS}


@pytest.mark.parametrize(
    ("setups", "expected"),
    [
        ([TI.SUCCESS], TI.SCHEDULED),
        ([TI.SUCCESS, TI.FAILED], TI.SCHEDULED),  # one setup ran: it tears down what it made
        ([TI.FAILED], TI.UPSTREAM_FAILED),
        ([TI.UPSTREAM_FAILED], TI.UPSTREAM_FAILED),
        ([TI.SKIPPED], TI.SKIPPED),
        ([], TI.SCHEDULED),  # no setup upstream: all_done
    ],
    ids=str,
)
def test_all_done_setup_success_runs_when_one_of_its_setups_ran(
    setups: list[TaskInstanceState], expected: TaskInstanceState
) -> None:
    upstream = Counter([*setups, TI.FAILED])  # a work task failed: the teardown runs anyway
    assert decide("all_done_setup_success", upstream, len(setups) + 1, Counter(setups)) == expected
    unfinished = Counter([*setups, TI.RUNNING])
    assert decide("all_done_setup_success", unfinished, len(setups) + 1, Counter(setups)) is None


@given(upstream=upstream_lists, rule=st.sampled_from(["all_done", "all_done_setup_success"]))
def test_waiting_rules_never_decide_before_every_upstream_finished(
    upstream: list[TaskInstanceState], rule: str
) -> None:
    decision = decide(rule, Counter(upstream), len(upstream))
    if any(state not in FINISHED for state in upstream):
        assert decision is None


# --- evaluate: one read of a run's rows --------------------------------------------------


def structure(**tasks: tuple[list[str], str]) -> DagStructure:
    return parse_structure(
        {
            "dag_id": "d",
            "tasks": {
                task_id: {"upstream": upstream, "trigger_rule": rule}
                for task_id, (upstream, rule) in tasks.items()
            },
        }
    )


def rows(**states: TaskInstanceState) -> list[TIRow]:
    return [TIRow(n, task_id, state) for n, (task_id, state) in enumerate(states.items(), 1)]


def test_evaluate_groups_the_none_task_instances_by_target() -> None:
    dag = structure(
        a=([], "all_success"),
        b=([], "all_success"),
        ok=(["a"], "all_success"),
        broken=(["b"], "all_success"),
        cleanup=(["b"], "all_done"),
        alert=(["a"], "one_failed"),
    )
    decisions = evaluate(
        dag,
        rows(a=TI.SUCCESS, b=TI.FAILED, ok=TI.NONE, broken=TI.NONE, cleanup=TI.NONE, alert=TI.NONE),
    )
    assert decisions == Decisions(schedule=[3, 5], upstream_failed=[4], skip=[6])


def test_evaluate_leaves_task_instances_that_are_not_none_alone() -> None:
    dag = structure(a=([], "all_success"), b=(["a"], "all_success"))
    assert evaluate(dag, rows(a=TI.QUEUED, b=TI.SCHEDULED)) == Decisions(schedule=[])


def test_evaluate_ignores_a_task_instance_whose_task_left_the_dag() -> None:
    dag = structure(a=([], "all_success"))
    assert evaluate(dag, rows(a=TI.RUNNING, gone=TI.NONE)) == Decisions()


@pytest.mark.parametrize("rule", ["all_success", "none_failed", "all_done"])
def test_a_removed_upstream_neither_blocks_nor_fails_its_downstream(rule: str) -> None:
    dag = structure(a=([], "all_success"), old=([], "all_success"), b=(["a", "old"], rule))
    decisions = evaluate(dag, rows(a=TI.SUCCESS, old=TI.REMOVED, b=TI.NONE))
    assert decisions.schedule == [3]


def test_a_downstream_waits_for_an_upstream_in_progress() -> None:
    dag = structure(a=([], "all_success"), b=(["a"], "all_success"))
    for state in IN_PROGRESS:
        if state == TI.NONE:
            assert evaluate(dag, rows(a=state, b=TI.NONE)) == Decisions(schedule=[1])
        else:
            assert evaluate(dag, rows(a=state, b=TI.NONE)) == Decisions()


def test_decisions_target_names_the_list_of_each_state() -> None:
    decisions = Decisions([1], [2], [3])
    assert decisions.target(TI.SCHEDULED) == [1]
    assert decisions.target(TI.UPSTREAM_FAILED) == [2]
    assert decisions.target(TI.SKIPPED) == [3]


# --- run_outcome --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        ([TI.SUCCESS, TI.SUCCESS], "success"),
        ([TI.SUCCESS, TI.SKIPPED], "success"),
        ([TI.SUCCESS, TI.FAILED], "failed"),
        ([TI.SUCCESS, TI.UPSTREAM_FAILED], "failed"),
        ([TI.FAILED, TI.RUNNING], None),
        ([TI.SUCCESS, TI.NONE], None),
        ([TI.SUCCESS, TI.SCHEDULED], None),
        ([TI.SUCCESS, TI.QUEUED], None),
        # A failed try with retries left keeps the run running (apache/airflow#7939).
        ([TI.SUCCESS, TI.UP_FOR_RETRY], None),
        ([TI.FAILED, TI.UP_FOR_RETRY], None),
        # Removed task instances never count, either way.
        ([TI.SUCCESS, TI.REMOVED], "success"),
        ([TI.FAILED, TI.REMOVED], "failed"),
        ([TI.RUNNING, TI.REMOVED], None),
    ],
    ids=str,
)
def test_run_outcome(states: list[TaskInstanceState], expected: str | None) -> None:
    assert run_outcome(states) == expected


@given(st.lists(st.sampled_from(list(TI)), max_size=10))
def test_run_outcome_is_decided_only_when_every_counted_task_instance_finished(
    states: list[TaskInstanceState],
) -> None:
    outcome = run_outcome(states)
    counted = [state for state in states if state != TI.REMOVED]
    assert (outcome is None) == any(state not in FINISHED for state in counted)
    assert run_outcome([*states, TI.REMOVED]) == outcome


def _chain_structure(length: int, rule: str = "all_success") -> DagStructure:
    tasks = {
        f"t{i}": {"upstream": [f"t{i - 1}"] if i else [], "trigger_rule": rule}
        for i in range(length)
    }
    return parse_structure({"dag_id": "chain", "tasks": tasks})


def test_a_failure_reaches_the_end_of_a_chain_in_one_pass() -> None:
    rows = [TIRow(1, "t0", TaskInstanceState.FAILED)] + [
        TIRow(i + 1, f"t{i}", TaskInstanceState.NONE) for i in range(1, 6)
    ]

    decisions = evaluate(_chain_structure(6), rows)

    assert sorted(decisions.upstream_failed) == [2, 3, 4, 5, 6]
    assert decisions.schedule == []


def test_a_skip_cascades_but_scheduling_does_not() -> None:
    rows = [
        TIRow(1, "t0", TaskInstanceState.SKIPPED),
        TIRow(2, "t1", TaskInstanceState.NONE),
        TIRow(3, "t2", TaskInstanceState.NONE),
    ]
    assert sorted(evaluate(_chain_structure(3), rows).skip) == [2, 3]

    rows = [
        TIRow(1, "t0", TaskInstanceState.SUCCESS),
        TIRow(2, "t1", TaskInstanceState.NONE),
        TIRow(3, "t2", TaskInstanceState.NONE),
    ]
    decisions = evaluate(_chain_structure(3), rows)
    assert decisions.schedule == [2]  # t2 waits for t1 to run, not merely to be scheduled


@pytest.mark.parametrize("rule", ["all_success", "all_done", "one_failed", "none_failed"])
def test_a_task_without_upstream_runs_whatever_its_rule(rule: str) -> None:
    rows = [TIRow(1, "t0", TaskInstanceState.NONE)]
    assert evaluate(_chain_structure(1, rule), rows).schedule == [1]


def test_evaluate_counts_the_setups_upstream_of_a_teardown() -> None:
    dag = parse_structure(
        {
            "dag_id": "d",
            "tasks": {
                "make": {"is_setup": True},
                "work": {"upstream": ["make"]},
                "remove": {
                    "upstream": ["make", "work"],
                    "trigger_rule": "all_done_setup_success",
                    "is_teardown": True,
                },
            },
        }
    )
    ran = evaluate(dag, rows(make=TI.SUCCESS, work=TI.FAILED, remove=TI.NONE))
    assert ran.schedule == [3]
    never_made = evaluate(dag, rows(make=TI.FAILED, work=TI.UPSTREAM_FAILED, remove=TI.NONE))
    assert never_made.upstream_failed == [3]


def test_a_teardown_that_does_not_decide_the_run_is_waited_for_but_not_counted() -> None:
    assert run_outcome([TI.SUCCESS], not_deciding=[TI.FAILED]) == "success"
    assert run_outcome([TI.SUCCESS], not_deciding=[TI.RUNNING]) is None
    assert run_outcome([TI.FAILED], not_deciding=[TI.SUCCESS]) == "failed"
