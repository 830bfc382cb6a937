"""A person's marks: their own transition table, the fence dropped, an ended run requeued."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from state.core.db import session_scope
from state.core.enums import DagRunState, TaskInstanceState
from state.core.models import DagRun, TaskInstance
from state.core.transitions import IllegalTransition, mark_tis, transition_tis
from state.records.marking import BadMark, delete_run, mark_run_state, mark_task_instances
from tests.state.harness import HAND_OVER_DAGS, Home

TI = TaskInstanceState
RUN = DagRunState


@pytest.fixture
def run_pk(home: Home) -> int:
    home.write_dag(HAND_OVER_DAGS)
    home.sync()
    return home.trigger("chain", run_id="r1")


def test_a_mark_may_do_what_the_fleet_may_not(home: Home, run_pk: int) -> None:
    ti = home.ti(run_pk, "a")
    with session_scope(home.url) as session, pytest.raises(IllegalTransition):
        transition_tis(session, [ti.id], [TI.NONE], TI.SUCCESS)
    with session_scope(home.url) as session:
        assert mark_tis(session, [ti.id], [TI.NONE], TI.SUCCESS) == 1
    with session_scope(home.url) as session, pytest.raises(IllegalTransition):
        mark_tis(session, [ti.id], [TI.REMOVED], TI.SUCCESS)
    assert home.states(run_pk)["a"] == TI.SUCCESS


def test_a_mark_drops_the_running_trys_fence(home: Home, run_pk: int) -> None:
    ti = home.ti(run_pk, "a")
    with session_scope(home.url) as session:
        session.execute(
            update(TaskInstance)
            .where(TaskInstance.id == ti.id)
            .values(state=TI.RUNNING, fence_token="t", try_number=1)
        )
        run = session.get_one(DagRun, run_pk)
        assert mark_task_instances(session, run, [session.get_one(TaskInstance, ti.id)], TI.FAILED)
    marked = home.ti(run_pk, "a")
    assert (marked.state, marked.fence_token) == (TI.FAILED, None)


def test_marking_an_ended_run_s_task_requeues_the_run(home: Home, run_pk: int) -> None:
    with session_scope(home.url) as session:
        mark_run_state(session, session.get_one(DagRun, run_pk), RUN.SUCCESS)
    assert home.run_state(run_pk) == RUN.SUCCESS
    assert set(home.states(run_pk).values()) == {TI.SUCCESS}
    with session_scope(home.url) as session:
        run = session.get_one(DagRun, run_pk)
        c = session.query(TaskInstance).filter_by(run_id="r1", task_id="c").one()
        assert mark_task_instances(session, run, [c], TI.FAILED) == [c.id]
        with pytest.raises(BadMark):
            mark_task_instances(session, run, [c], TI.RUNNING)
    assert home.run_state(run_pk) == RUN.QUEUED


def test_a_run_marked_failed_fails_what_runs_and_skips_what_waits(home: Home, run_pk: int) -> None:
    a = home.ti(run_pk, "a")
    with session_scope(home.url) as session:
        session.execute(
            update(TaskInstance).where(TaskInstance.id == a.id).values(state=TI.RUNNING)
        )
        mark_run_state(session, session.get_one(DagRun, run_pk), RUN.FAILED)
    assert home.states(run_pk) == {"a": TI.FAILED, "b": TI.SKIPPED, "c": TI.SKIPPED}
    assert home.run_state(run_pk) == RUN.FAILED
    with session_scope(home.url) as session:
        delete_run(session, session.get_one(DagRun, run_pk))
    with session_scope(home.url) as session:
        assert session.query(TaskInstance).count() == 0
