"""A human-in-the-loop task's question on its task page, in headless Chromium: the form built
from the options and the params, answered by a user who may run tasks, the answer shown after;
a viewer, and a user the question does not assign, see no form. The form's typed values and a
refusal are checked without a browser too (``api/pages/hitl.py``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from broker_config import message_of
from state.core.db import session_scope, statement_scope
from state.core.enums import TaskInstanceState
from state.core.models import DagModel, DagRun, HITLDetail
from state.engine.outcomes import AwaitingInput
from state.engine.scheduling import CachedDag, schedule_run
from state.engine.try_life import claim_try
from tests.state.harness import Home, end_claimed
from tradewind.triggers.base import decode_kwargs

TI = TaskInstanceState
DAG = """
from tradewind import DAG, task

@task
def review():
    pass

with DAG("reviews"):
    review()
"""
QUESTION = {
    "subject": "Ship release 1.2?",
    "body": "Changes:\n- faster loads\n- new report",
    "options": ["Ship", "Hold", "Cancel"],
    "multiple": False,
    "defaults": ["Hold"],
    "params": {
        "reason": {"value": "", "description": "Why", "schema": {"type": "string"}},
        "batches": {"value": 3, "description": None, "schema": {"type": "integer"}},
        "notify": {"value": False, "description": None, "schema": {"type": "boolean"}},
        "region": {"value": "eu", "description": None, "schema": {"enum": ["eu", "us"]}},
    },
    "assigned_users": [],
}


def asking(home: Home, question: dict[str, Any], run_id: str = "r1") -> tuple[int, str]:
    """A run of ``reviews`` whose one task asks ``question``; its pk and task page path."""
    home.write_dag(DAG, "reviews.py")
    home.sync()
    run_pk = home.trigger("reviews", run_id=run_id)
    with session_scope(home.url) as session:
        run = session.get_one(DagRun, run_pk, with_for_update=True)
        [queued] = schedule_run(session, run, CachedDag.of(session.get_one(DagModel, "reviews")))
    with statement_scope(home.url) as session:
        held = claim_try(session, message_of(queued))
    end_claimed(home.url, held, AwaitingInput("execute_complete", question, 3600.0))
    return run_pk, f"/dags/reviews/runs/{run_id}/tasks/review"


def test_a_person_answers_the_question_on_the_task_page(
    sqlite_home: Home, browser_as: Callable[[str], Any], shoot: Callable[[Any, str], Path]
) -> None:
    run_pk, path = asking(sqlite_home, QUESTION)
    page = browser_as("user")
    page.goto(path)
    section = page.locator("#required-action")
    expect(section.get_by_role("heading", name="Required action")).to_be_visible()
    expect(section).to_contain_text("Ship release 1.2?")
    expect(section).to_contain_text("- new report")
    expect(section.get_by_label("Hold")).to_be_checked()  # the default, preselected
    expect(section).to_contain_text("the defaults answer: Hold")
    shoot(page, "hitl-form")
    section.get_by_label("Ship").check()
    section.get_by_label("reason").fill("all green")
    section.get_by_label("batches").fill("5")
    section.get_by_label("notify").check()
    section.get_by_label("region").select_option("us")
    section.get_by_role("button", name="Respond").click()
    expect(page.locator(".flash")).to_contain_text("Answered Ship")
    expect(page.locator("#required-action h2")).to_have_text("Answered")
    expect(page.locator("#required-action")).to_contain_text("user answered")
    shoot(page, "hitl-answered")
    ti = sqlite_home.ti(run_pk, "review")
    assert ti.state == TI.SCHEDULED
    event = decode_kwargs(ti.next_kwargs)["event"]
    assert event["chosen_options"] == ["Ship"]
    assert event["params_input"] == {
        "reason": "all green",
        "batches": 5,
        "notify": True,
        "region": "us",
    }


def test_who_may_not_answer_sees_no_form_and_a_bad_value_is_refused_in_one_line(
    sqlite_home: Home, browser_as: Callable[[str], Any]
) -> None:
    assigned = {**QUESTION, "assigned_users": [{"id": "op", "name": "op"}]}
    run_pk, path = asking(sqlite_home, assigned)
    for role in ("viewer", "user"):
        page = browser_as(role)
        page.goto(path)
        expect(page.locator("#required-action")).to_contain_text("may not answer")
        expect(page.locator("#required-action form")).to_have_count(0)
    page = browser_as("op")
    page.goto(path)
    section = page.locator("#required-action")
    section.get_by_label("Ship").check()
    section.get_by_label("batches").evaluate("field => { field.type = 'text' }")
    section.get_by_label("batches").fill("many")
    section.get_by_role("button", name="Respond").click()
    expect(page.locator(".flash.error")).to_have_text(
        "Not answered: batches: 'many' is not an integer"
    )
    assert sqlite_home.ti(run_pk, "review").state == TI.AWAITING_INPUT
    with session_scope(sqlite_home.url) as session:
        assert session.get_one(HITLDetail, sqlite_home.ti(run_pk, "review").id).responded_at is None
