"""What a client following runs reads (``state.views.run_following``), and a run left with one task
(``state.engine.scheduling.queue_task_alone``, what ``tradewind tasks test`` runs)."""

from __future__ import annotations

import pytest

from state.core.db import session_scope
from state.core.enums import TaskInstanceState
from state.engine.scheduling import queue_task_alone
from state.views.run_following import RunPoll, poll_run, run_states, run_waits
from tests.state.harness import HAND_OVER_DAGS, Home, counting_statements

TI = TaskInstanceState


@pytest.fixture
def run_pk(home: Home) -> int:
    home.write_dag(HAND_OVER_DAGS)
    home.sync()
    return home.trigger("chain", run_id="r1")


def test_a_poll_counts_the_task_instances_by_state_in_a_fixed_number_of_statements(
    home: Home, run_pk: int
) -> None:
    [queued] = home.schedule(run_pk)
    home.end_try(queued.ti_id, TI.SUCCESS)
    with counting_statements(home.url) as counter, session_scope(home.url) as session:
        poll = poll_run(session, "chain", "r1")
    assert poll == RunPoll("running", {"success": 1, "none": 2}, [])
    assert len(counter.statements) <= 3  # the run, the counts, the structure once per version


def test_the_waits_name_each_task_instances_state_and_retry_time(home: Home, run_pk: int) -> None:
    home.schedule(run_pk)
    with session_scope(home.url) as session:
        state, waits = run_waits(session, run_pk)
    assert state == "running"
    assert sorted(wait.state for wait in waits) == ["none", "none", "queued"]
    assert {wait.next_retry_at for wait in waits} == {None}


def test_the_states_of_runs_leave_out_the_runs_not_found(home: Home, run_pk: int) -> None:
    with session_scope(home.url) as session:
        assert run_states(session, "chain", ["r1", "r2"]) == {"r1": "queued"}


def test_a_task_queued_alone_leaves_the_others_removed(home: Home, run_pk: int) -> None:
    with session_scope(home.url) as session:
        queued = queue_task_alone(session, home.run(run_pk), "b")
    assert (queued.task_id, queued.try_number) == ("b", 1)
    assert home.states(run_pk) == {"a": TI.REMOVED, "b": TI.QUEUED, "c": TI.REMOVED}
    assert home.run_state(run_pk) == "running"
