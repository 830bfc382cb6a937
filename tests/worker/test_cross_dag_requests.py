"""The supervisor's answers to the cross-DAG requests, through the request table (``handle``),
on a migrated SQLite store: a run triggered (or refused in one line), states read back."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import update

from state.core.db import session_scope
from state.core.models import TaskInstance
from state.core.transitions import Fence
from tests.state.harness import Home, tradewind_home
from worker import wire as p
from worker.supervisor.requests import handle

WHEN = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)

DAGS = """
from tradewind import DAG, Param, task


@task
def work():
    pass


with DAG("target", params={"x": Param(0, type="integer")}):
    work()

with DAG("controller"):
    work()
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    with tradewind_home(tmp_path, monkeypatch) as made:
        made.write_dag(DAGS)
        made.sync()
        yield made


@pytest.fixture
def fence(home: Home) -> Fence:
    """The fence of a running try of the controller's task: the try asking."""
    ti = home.ti(home.trigger("controller", run_id="c1"), "work")
    with session_scope(home.url) as session:
        values = {"state": "running", "try_number": 1, "fence_token": "token"}
        session.execute(update(TaskInstance).where(TaskInstance.id == ti.id).values(**values))
    return Fence(ti.id, 1, "token")


def ask(home: Home, request: p.Message, fence: Fence | None = None) -> Any:
    # The cross-DAG handlers read the store's URL, the try's settings, and its fence.
    given = fence or Fence(0, 1, "none")
    ctx: Any = SimpleNamespace(url=home.url, settings=home.settings, fence=given, lost=False)
    request.id = 9
    reply = handle(ctx, request)
    assert reply is not None and reply.id == 9
    return reply


def test_a_triggered_run_is_created_once_then_exists_then_is_cleared(
    home: Home, fence: Fence
) -> None:
    trigger = p.TriggerDagRun(dag_id="target", run_id="r1", conf={"x": 2}, logical_date=WHEN)
    created = ask(home, trigger, fence)
    assert created == p.TriggerDagRunResult(id=9, run_id="r1", outcome="created")
    assert ask(home, trigger, fence).outcome == "exists"
    reset = trigger.model_copy(update={"reset_dag_run": True})
    assert ask(home, reset, fence).outcome == "cleared"

    assert ask(home, p.GetDagRunState(dag_id="target", run_id="r1")).state == "queued"
    assert ask(home, p.GetDagRunState(dag_id="target", run_id="r2")).state is None
    assert ask(home, p.GetDagRunStates(dag_id="target", logical_dates=[WHEN])).states == ["queued"]
    states = ask(
        home, p.GetTaskInstanceStates(dag_id="target", logical_dates=[WHEN], task_ids=["work"])
    )
    assert states.task_instances == [("r1", "work", -1, "none")]


def test_a_try_given_up_triggers_nothing(home: Home) -> None:
    refused = ask(home, p.TriggerDagRun(dag_id="target", run_id="r1"))
    assert refused.error == "try 1 of task instance 0 no longer holds it"
    assert ask(home, p.GetDagRunState(dag_id="target", run_id="r1")).state is None


def test_a_bad_conf_or_an_unknown_dag_is_one_error_line(home: Home, fence: Fence) -> None:
    bad = ask(home, p.TriggerDagRun(dag_id="target", run_id="r1", conf={"x": "two"}), fence)
    assert isinstance(bad, p.ErrorResponse)
    assert bad.error == "DAG 'target': param 'x': 'two' is not of type 'integer'"
    unknown = ask(home, p.TriggerDagRun(dag_id="nope", run_id="r1"), fence)
    assert unknown.error == "no DAG named 'nope': see `tradewind dags list`"
    assert ask(home, p.GetDagRunState(dag_id="target", run_id="r1")).state is None


def test_a_dag_s_tasks_are_listed_for_check_existence(home: Home) -> None:
    assert ask(home, p.GetDagTasks(dag_id="target")) == p.DagTasksResult(
        id=9, found=True, task_ids=["work"], group_ids=[], is_paused=False
    )
    assert ask(home, p.GetDagTasks(dag_id="nope")).found is False
    missing = p.GetTaskInstanceStates(dag_id="nope", logical_dates=[WHEN], task_group_id="g")
    assert ask(home, missing).task_instances == []
