"""A branch's end skips the tasks it did not follow with the end itself, in a constant number
of statements, and the trigger rules carry the skips further (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.exc import OperationalError

import state.engine.end
import state.engine.scheduling
from broker_config import message_of
from state.core.db import get_engine, statement_scope
from state.core.enums import DagRunState, TaskInstanceState
from state.engine.outcomes import Succeeded
from state.engine.scheduling import Enqueue
from state.engine.try_life import HeldTry, claim_try
from tests.state.harness import Home, end_claimed, tradewind_home

TI = TaskInstanceState

BRANCH_DAG = """
from tradewind import DAG, task

@task.branch
def pick():
    return "chosen"

@task
def step():
    pass

with DAG("wide"):
    branch = pick()
    branch >> step.override(task_id="chosen")()
    others = [step.override(task_id=f"t{n}")() for n in range({width})]
    branch >> others
    others[0] >> step.override(task_id="after_t0")()
    others[0] >> step.override(task_id="cleanup", trigger_rule="all_done")()
"""


@pytest.fixture(params=["sqlite", "postgresql"])
def store(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Home]:
    env = {"sql_url": request.getfixturevalue("pg_url")} if request.param == "postgresql" else {}
    with tradewind_home(tmp_path, monkeypatch, **env) as made:
        yield made


class Writes:
    """The statements sent while listening, each with its parameters."""

    def __init__(self, url: str) -> None:
        self.engine = get_engine(url)
        self.seen: list[tuple[str, Any]] = []
        event.listen(self.engine, "before_cursor_execute", self._record)

    def _record(self, conn: object, cursor: object, statement: str, params: Any, *a: Any) -> None:
        if not statement.startswith(("BEGIN", "PRAGMA")):
            self.seen.append((statement, params))

    def skipping(self) -> list[str]:
        """The statements that move task instances to ``skipped``."""
        return [
            text
            for text, params in self.seen
            if text.lstrip().upper().startswith("UPDATE TASK_INSTANCE")
            and "skipped" in (params.values() if isinstance(params, dict) else params)
        ]

    def close(self) -> None:
        event.remove(self.engine, "before_cursor_execute", self._record)


def end_branch(home: Home, width: int) -> tuple[int, Writes]:
    home.write_dag(BRANCH_DAG.replace("{width}", str(width)), name=f"wide_{width}.py")
    assert home.sync().import_errors == {}
    run_pk = home.trigger("wide")
    assert [e.task_id for e in home.schedule(run_pk)] == ["pick"]
    with statement_scope(home.url) as session:
        claim = claim_try(session, message_of(Enqueue.of(home.ti(run_pk, "pick"))))
    assert isinstance(claim, HeldTry)
    writes = Writes(home.url)
    try:
        recorded, ready = end_claimed(home.url, claim, Succeeded(follow=("chosen",)))
    finally:
        writes.close()
    assert recorded
    assert sorted(e.task_id for e in ready) == ["chosen", "cleanup"]
    return run_pk, writes


def test_a_branch_over_1000_tasks_skips_them_in_at_most_3_statements(store: Home) -> None:
    run_pk, writes = end_branch(store, 1000)

    states = store.states(run_pk)
    assert states["pick"] == TI.SUCCESS and states["chosen"] == TI.QUEUED
    assert {states[f"t{n}"] for n in range(1000)} == {TI.SKIPPED}
    assert states["after_t0"] == TI.SKIPPED  # all_success: the skip propagates
    assert states["cleanup"] == TI.QUEUED  # all_done: a skipped upstream is done
    assert 1 <= len(writes.skipping()) <= 3
    assert store.run_state(run_pk) == DagRunState.RUNNING


def test_the_statements_of_a_branch_end_do_not_grow_with_its_width(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = []
    for width in (10, 1000):
        (tmp_path / str(width)).mkdir()
        with tradewind_home(tmp_path / str(width), monkeypatch) as home:
            counts.append(len(end_branch(home, width)[1].seen))
    assert counts[0] == counts[1]


def test_a_branch_whose_pass_fails_still_records_its_skips_with_its_end(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_pass(*args: Any) -> None:
        raise OperationalError("pass", {}, Exception("the pass failed"))

    monkeypatch.setattr(state.engine.end, "pass_after_end", failing_pass)
    home.write_dag(BRANCH_DAG.replace("{width}", "3"))
    assert home.sync().import_errors == {}
    run_pk = home.trigger("wide")
    home.schedule(run_pk)
    with statement_scope(home.url) as session:
        claim = claim_try(session, message_of(Enqueue.of(home.ti(run_pk, "pick"))))
    assert isinstance(claim, HeldTry)

    recorded, ready = end_claimed(home.url, claim, Succeeded(follow=("chosen",)))

    assert recorded and ready == []
    states = home.states(run_pk)
    assert states["pick"] == TI.SUCCESS
    assert {states[f"t{n}"] for n in range(3)} == {TI.SKIPPED}
    assert states["chosen"] == TI.NONE  # left to the scheduler's pass


def test_a_process_that_never_read_the_dag_reads_it_before_a_branch_end(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the structure the plan would be a plain pass, and the choice would be lost."""
    home.write_dag(BRANCH_DAG.replace("{width}", "3"))
    assert home.sync().import_errors == {}
    run_pk = home.trigger("wide")
    home.schedule(run_pk)
    with statement_scope(home.url) as session:
        claim = claim_try(session, message_of(Enqueue.of(home.ti(run_pk, "pick"))))
    assert isinstance(claim, HeldTry)
    monkeypatch.setattr(state.engine.scheduling, "_DAGS", {})  # a fresh worker process

    recorded, ready = end_claimed(home.url, claim, Succeeded(follow=("chosen",)))

    assert recorded and sorted(e.task_id for e in ready) == ["chosen", "cleanup"]
    assert {home.states(run_pk)[f"t{n}"] for n in range(3)} == {TI.SKIPPED}
