"""The human-in-the-loop operators at load and on resume, without a store: their checks in one
line, the question they store, what ``execute_complete`` makes of an answer, a timeout and a
rejection, and the choice an approval and a branch hand the store."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from tradewind import DAG
from tradewind.exceptions import TaskAwaitingInput
from tradewind.params import Param
from tradewind.standard.hitl import (
    ApprovalOperator,
    HITLBranchOperator,
    HITLEntryOperator,
    HITLOperator,
    HITLRejectException,
    HITLTimeoutError,
)

AT = dt.datetime(2026, 12, 4, 12, tzinfo=dt.UTC)


def answer(*chosen: str, **given: Any) -> dict[str, Any]:
    who = {"id": "ada", "name": "ada"}
    return {"chosen_options": list(chosen), "params_input": given, "responded_at": AT,
            "responded_by_user": who, "timedout": False}  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "refusal"),
    [
        ({"options": []}, '"options" cannot be empty'),
        ({"options": ["a"], "defaults": ["b"]}, "should be a subset of options"),
        ({"options": ["a", "b"], "defaults": ["a", "b"]}, "more than one default"),
        ({"options": ["a"], "params": {"_options": 1}}, '"_options" is not allowed'),
        ({"options": ["a"], "assigned_users": ["ada"]}, "assigned_users"),
    ],
)
def test_a_bad_question_is_refused_at_load_in_one_line(kwargs: dict, refusal: str) -> None:
    with DAG("bad"), pytest.raises(ValueError, match=refusal):
        HITLOperator(task_id="ask", subject="?", **kwargs)


def test_execute_asks_the_question_and_execution_timeout_bounds_the_wait() -> None:
    with DAG("asks"):
        ask = HITLOperator(
            task_id="ask",
            subject="Ship?",
            body="notes",
            options=["yes", "no"],
            defaults="no",
            params={"why": Param("", type="string", description="Because")},
            assigned_users={"id": "ada", "name": "Ada"},
            execution_timeout=dt.timedelta(minutes=5),
        )
    with pytest.raises(TaskAwaitingInput) as asked:
        ask.execute({})
    assert asked.value.method_name == "execute_complete" and asked.value.timeout == 300.0
    assert asked.value.question == {
        "subject": "Ship?",
        "body": "notes",
        "options": ["yes", "no"],
        "multiple": False,
        "defaults": ["no"],
        "params": {"why": {"value": "", "description": "Because", "schema": {"type": "string"}}},
        "assigned_users": [{"id": "ada", "name": "Ada"}],
    }
    assert ask.task.options.execution_timeout is None  # the wait, not the try, is bounded
    result = ask.execute_complete({}, answer("yes", why="green"))
    assert result == {"chosen_options": ["yes"], "params_input": {"why": "green"},
                      "responded_at": AT.isoformat(),
                      "responded_by_user": {"id": "ada", "name": "ada"}}  # fmt: skip
    with pytest.raises(ValueError, match="not in"):
        ask.execute_complete({}, answer("maybe"))
    with pytest.raises(HITLTimeoutError, match="timeout"):
        ask.execute_complete({}, {"error": "the timeout passed", "error_type": "timeout"})


def test_an_approval_and_a_branch_choose_what_runs_after_them() -> None:
    with DAG("gates"):
        gate = ApprovalOperator(task_id="gate", subject="ok?")
        strict = ApprovalOperator(task_id="strict", subject="ok?", fail_on_reject=True)
        route = HITLBranchOperator(
            task_id="route", subject="?", options=["A", "B"], options_mapping={"A": "a_task"}
        )
        entry = HITLEntryOperator(task_id="entry", subject="fill")
    assert gate.options == ["Approve", "Reject"] and entry.defaults == ["OK"]
    approved = gate.execute_complete({}, answer("Approve"))
    rejected = gate.execute_complete({}, answer("Reject"))
    choice = gate.task.choice
    assert choice.kind == "short_circuit" and choice.ignore_downstream_trigger_rules is False
    assert choice.follow(gate.task, approved) is None  # everything runs
    assert choice.follow(gate.task, rejected) == ()  # its downstream is skipped
    with pytest.raises(HITLRejectException, match='"Reject"'):
        strict.execute_complete({}, answer("Reject"))
    assert route.execute_complete({}, answer("A")) == ["a_task"]
    assert route.task.choice.kind == "branch"
    with pytest.raises(ValueError, match="Passing options"), DAG("x"):
        ApprovalOperator(task_id="bad", subject="?", options=["a"])
