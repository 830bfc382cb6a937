"""A human-in-the-loop question in the store: ``running -> awaiting_input`` frees the slot and
costs no try, the question is written with the end, an answer is checked (options, multiple,
the form's schemas, the assigned users) and resumes the same try with the answer, a second
answer or an answer after a clear is refused, and a timeout answers with the defaults (or an
error without them).

Tries are claimed and ended with the supervisor's own functions (SQLite).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from state.core import Page
from state.core.db import session_scope
from state.core.enums import TASK_INSTANCE_TRANSITIONS, TaskInstanceState
from state.core.models import DagRun, HITLDetail, utcnow
from state.engine.hitl import TIMED_OUT, AnswerRefused, answer, time_out_questions
from state.engine.outcomes import AwaitingInput, Succeeded
from state.engine.runs import clear_task_instances
from state.engine.scheduling import Enqueue
from state.views.hitl import QuestionFilter, list_questions
from tests.state.harness import Home, claim, end_claimed, schedule, tradewind_home
from tradewind.triggers.base import decode_kwargs

TI = TaskInstanceState

DAG_SOURCE = """
from tradewind import DAG, task

@task(pool="solo")
def ask():
    return 1

with DAG("asks"):
    ask.override(task_id="a")()
    ask.override(task_id="b")()
"""
QUESTION = {
    "subject": "Ship it?",
    "body": "Release 1.2",
    "options": ["yes", "no", "later"],
    "multiple": False,
    "defaults": ["no"],
    "params": {"reason": {"value": "none", "description": None, "schema": {"type": "string"}}},
    "assigned_users": [],
}
ADA = {"id": "ada", "name": "ada"}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    from state.engine.pools import set_pool

    with tradewind_home(tmp_path, monkeypatch) as made:
        with session_scope(made.url) as session:
            set_pool(session, "solo", 1)
        made.write_dag(DAG_SOURCE)
        assert made.sync().import_errors == {}
        yield made


def asking_a(home: Home, question: dict | None = None, timeout: float | None = 60.0) -> int:
    run_pk = home.trigger("asks")
    [first] = schedule(home, run_pk)
    held = claim(home, first)
    asked = AwaitingInput("execute_complete", question or QUESTION, timeout)
    assert end_claimed(home.url, held, asked).recorded
    return run_pk


def refused(home: Home, ti_id: int, chosen: list[str], given: dict | None = None, user=ADA):
    with session_scope(home.url) as session, pytest.raises(AnswerRefused) as caught:
        answer(session, ti_id, user, chosen, given)
    return caught.value.status, str(caught.value)


def test_the_table_allows_waiting_for_input_and_its_ways_out() -> None:
    assert TI.AWAITING_INPUT in TASK_INSTANCE_TRANSITIONS[TI.RUNNING]
    assert TASK_INSTANCE_TRANSITIONS[TI.AWAITING_INPUT] == {TI.SCHEDULED, TI.NONE, TI.REMOVED}


def test_asking_frees_the_slot_costs_no_try_and_the_answer_resumes_the_same_try(
    home: Home,
) -> None:
    run_pk = asking_a(home)
    a = home.ti(run_pk, "a")
    assert (a.state, a.next_method, a.try_number) == (TI.AWAITING_INPUT, "execute_complete", 1)
    assert home.ti(run_pk, "b").state == TI.QUEUED  # the one slot of "solo" went to b
    with session_scope(home.url) as session:
        row = session.get_one(HITLDetail, a.id)
        assert (row.subject, row.options, row.try_number) == ("Ship it?", QUESTION["options"], 1)
        assert row.timeout_at is not None and row.responded_at is None
        found, total = list_questions(session, QuestionFilter(dag_id="asks"), Page(limit=10))
        assert total == 1 and found[0].ti.task_id == "a"
    with session_scope(home.url) as session:
        taken = answer(session, a.id, ADA, ["yes"], {"reason": "green"})
    assert taken.resumed and taken.responded_by == ADA
    a = home.ti(run_pk, "a")
    assert a.state == TI.SCHEDULED
    event = decode_kwargs(a.next_kwargs)["event"]
    assert event["chosen_options"] == ["yes"] and event["params_input"] == {"reason": "green"}
    assert event["responded_by_user"] == ADA and event["timedout"] is False
    assert isinstance(event["responded_at"], dt.datetime)
    b = claim(home, Enqueue.of(home.ti(run_pk, "b")))
    end_claimed(home.url, b, Succeeded())  # b's end hands the slot to a
    resumed = claim(home, Enqueue.of(home.ti(run_pk, "a")))
    assert resumed.fence.try_number == 1 and resumed.next_method == "execute_complete"
    # A second answer is refused, naming who answered.
    status, line = refused(home, a.id, ["no"])
    assert status == 409 and "already answered, by ada" in line


def test_a_bad_answer_is_refused_in_one_line_and_changes_nothing(home: Home) -> None:
    run_pk = asking_a(home)
    a = home.ti(run_pk, "a")
    assert refused(home, a.id, ["maybe"])[0] == 400
    assert refused(home, a.id, []) == (400, "choose at least one option")
    assert refused(home, a.id, ["yes", "no"])[0] == 400  # not multiple
    status, line = refused(home, a.id, ["yes"], {"reason": 3})
    assert status == 400 and "reason" in line
    assert refused(home, a.id, ["yes"], {"other": 1})[0] == 400
    assert home.ti(run_pk, "a").state == TI.AWAITING_INPUT
    with session_scope(home.url) as session:
        assert session.get_one(HITLDetail, a.id).responded_at is None


def test_only_an_assigned_user_may_answer(home: Home) -> None:
    run_pk = asking_a(home, {**QUESTION, "assigned_users": [{"id": "bob", "name": "Bob"}]})
    a = home.ti(run_pk, "a")
    status, line = refused(home, a.id, ["yes"])
    assert status == 403 and "Bob" in line
    with session_scope(home.url) as session:
        assert answer(session, a.id, {"id": "bob", "name": "bob"}, ["yes"]).resumed


def test_a_cleared_question_is_no_longer_answered(home: Home) -> None:
    run_pk = asking_a(home)
    a = home.ti(run_pk, "a")
    with session_scope(home.url) as session:
        clear_task_instances(session, session.get_one(DagRun, run_pk), ["a"])
    status, line = refused(home, a.id, ["yes"])
    assert status == 409 and "no longer waits" in line


def test_the_timeout_answers_with_the_defaults_or_fails_without_them(home: Home) -> None:
    run_pk = asking_a(home, timeout=1.0)
    a = home.ti(run_pk, "a")
    later = utcnow() + dt.timedelta(seconds=5)
    with session_scope(home.url) as session:
        assert time_out_questions(session, utcnow()) == []  # not yet due
        [timed_out] = time_out_questions(session, later)
    assert timed_out.defaults == ["no"]
    event = decode_kwargs(home.ti(run_pk, "a").next_kwargs)["event"]
    assert event["chosen_options"] == ["no"] and event["params_input"] == {"reason": "none"}
    assert event["responded_by_user"] is None and event["timedout"] is True
    with session_scope(home.url) as session:
        assert session.get_one(HITLDetail, a.id).chosen_options == ["no"]
        assert time_out_questions(session, later) == []  # answered once

    from state.engine.pools import set_pool

    with session_scope(home.url) as session:
        set_pool(session, "solo", 8)  # room for a second run
    other = home.trigger("asks")
    first = next(e for e in schedule(home, other) if e.task_id == "a")
    held = claim(home, first)
    asked = AwaitingInput("execute_complete", {**QUESTION, "defaults": None}, 1.0)
    end_claimed(home.url, held, asked)
    with session_scope(home.url) as session:
        [timed_out] = time_out_questions(session, later)
    assert timed_out.defaults is None
    event = decode_kwargs(home.ti(other, "a").next_kwargs)["event"]
    assert event == {"error": TIMED_OUT, "error_type": "timeout"}
