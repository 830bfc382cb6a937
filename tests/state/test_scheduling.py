"""Scheduling runs on SQLite: readiness applied, tries queued, retries and caps, runs settled.

No worker here: a test plays the supervisor with ``Home.end_try`` (queued -> running -> an end).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from state.core.db import session_scope
from state.core.enums import DagRunState, TaskInstanceState
from state.core.models import DagModel, DagRun, TaskInstance, TaskStateValue, XCom, utcnow
from state.core.structure import structure_of
from state.core.transitions import transition_tis
from state.engine import runs
from state.engine.runs import clear_task_instances, verify_integrity
from state.engine.scheduling import CachedDag, Enqueue, schedule_run
from tests.state.harness import Home

TI = TaskInstanceState
RUN = DagRunState

CHAIN = """
from tradewind import dag, task

@task
def a():
    return 1

@task
def b(x):
    return x

@task
def c(x):
    return x

@dag(dag_id="chain")
def chain():
    c(b(a()))

chain()
"""


def queued_tasks(enqueues: list[Enqueue]) -> list[str]:
    return sorted(e.task_id for e in enqueues)


def schedule_at(home: Home, run_pk: int, now: dt.datetime) -> list[Enqueue]:
    with session_scope(home.url) as session:
        run = session.get_one(DagRun, run_pk, with_for_update=True)
        return schedule_run(session, run, CachedDag.of(session.get_one(DagModel, run.dag_id)), now)


def test_a_chain_is_scheduled_one_step_at_a_time(home: Home) -> None:
    home.write_dag(CHAIN)
    home.sync()
    run_pk = home.trigger("chain")
    assert home.run_state(run_pk) == RUN.QUEUED

    [first] = home.schedule(run_pk)
    assert (first.task_id, first.try_number, first.queue) == ("a", 1, "default")
    assert home.states(run_pk) == {"a": TI.QUEUED, "b": TI.NONE, "c": TI.NONE}
    assert home.run_state(run_pk) == RUN.RUNNING
    assert home.schedule(run_pk) == []  # nothing new while a runs: a is never queued twice

    for task_id in ("a", "b", "c"):
        home.end_try(home.ti(run_pk, task_id).id, TI.SUCCESS)
        queued = home.schedule(run_pk)
        nxt = {"a": ["b"], "b": ["c"], "c": []}[task_id]
        assert queued_tasks(queued) == nxt
    assert home.states(run_pk) == dict.fromkeys("abc", TI.SUCCESS)
    run = home.run(run_pk)
    assert run.state == RUN.SUCCESS
    assert run.end_date is not None


def test_an_enqueue_names_the_try_and_carries_the_ids(home: Home) -> None:
    home.write_dag(CHAIN)
    home.sync()
    run_pk = home.trigger("chain", run_id="r1")
    [enqueue] = home.schedule(run_pk)
    ti = home.ti(run_pk, "a")
    assert enqueue == Enqueue(ti.id, 1, "chain", "r1", "a", -1, "default")
    assert (ti.try_number, ti.queued_resends, ti.deliveries, ti.fence_token) == (1, 0, 0, None)
    assert ti.queued_at is not None


RETRY = """
import datetime as dt
from tradewind import dag, task

@task(retries=2, retry_delay=dt.timedelta(seconds=60))
def flaky():
    pass

@dag(dag_id="retry")
def retry():
    flaky()

retry()
"""


def test_a_retry_waits_in_up_for_retry_until_next_retry_at(home: Home) -> None:
    home.write_dag(RETRY)
    home.sync()
    run_pk = home.trigger("retry")
    [first] = home.schedule(run_pk)
    retry_at = utcnow() + dt.timedelta(seconds=60)
    home.end_try(first.ti_id, TI.UP_FOR_RETRY, next_retry_at=retry_at)

    assert home.schedule(run_pk) == []
    assert schedule_at(home, run_pk, retry_at - dt.timedelta(seconds=1)) == []
    assert home.ti(run_pk, "flaky").state == TI.UP_FOR_RETRY
    assert home.run_state(run_pk) == RUN.RUNNING  # a try with retries left is not an end

    [second] = schedule_at(home, run_pk, retry_at)
    assert (second.ti_id, second.try_number) == (first.ti_id, 2)
    ti = home.ti(run_pk, "flaky")
    assert (ti.state, ti.next_retry_at) == (TI.QUEUED, None)


def test_a_failed_last_try_fails_the_run(home: Home) -> None:
    home.write_dag(RETRY)
    home.sync()
    run_pk = home.trigger("retry")
    for try_number in (1, 2, 3):
        [queued] = schedule_at(home, run_pk, utcnow() + dt.timedelta(hours=1))
        assert queued.try_number == try_number
        last = try_number == 3
        if last:
            home.end_try(queued.ti_id, TI.FAILED)
        else:
            home.end_try(queued.ti_id, TI.UP_FOR_RETRY, next_retry_at=utcnow())
            assert home.run_state(run_pk) == RUN.RUNNING
    assert home.schedule(run_pk) == []
    assert home.run_state(run_pk) == RUN.FAILED


WIDE = """
from tradewind import DAG, task

@task
def work():
    pass

with DAG("wide", max_active_tasks=2):
    for _ in range(5):
        work()
"""


def test_max_active_tasks_caps_the_queued_and_running_task_instances(home: Home) -> None:
    home.write_dag(WIDE)
    home.sync()
    run_pk = home.trigger("wide")

    first = home.schedule(run_pk)
    assert len(first) == 2
    states = home.states(run_pk)
    assert sorted(states.values()) == sorted([TI.QUEUED] * 2 + [TI.SCHEDULED] * 3)
    assert home.schedule(run_pk) == []

    with session_scope(home.url) as session:
        transition_tis(session, [first[0].ti_id], [TI.QUEUED], TI.RUNNING)
    assert home.schedule(run_pk) == []  # running holds its slot too

    home.end_try(first[1].ti_id, TI.SUCCESS)
    assert len(home.schedule(run_pk)) == 1


def test_max_active_tasks_counts_every_run_of_the_dag(home: Home) -> None:
    home.write_dag(WIDE)
    home.sync()
    one, two = home.trigger("wide", run_id="one"), home.trigger("wide", run_id="two")

    assert len(home.schedule(one)) == 2
    assert home.schedule(two) == []
    assert home.run_state(two) == RUN.QUEUED

    [done, _] = [ti for ti in home.tis(one).values() if ti.state == TI.QUEUED]
    home.end_try(done.id, TI.SUCCESS)
    assert len(home.schedule(two)) == 1


def rewrite(home: Home, tasks: str) -> None:
    """The ``changing`` DAG with ``tasks`` (a space-separated list of independent tasks)."""
    calls = "\n    ".join(f"work.override(task_id={name!r})()" for name in tasks.split())
    home.write_dag(
        f"""
from tradewind import dag, task

@task
def work():
    pass

@dag(dag_id="changing")
def changing():
    {calls}

changing()
"""
    )
    home.sync()


def test_verify_integrity_adds_removes_and_restores_task_instances(home: Home) -> None:
    rewrite(home, "a b")
    run_pk = home.trigger("changing")
    for queued in home.schedule(run_pk):
        home.end_try(queued.ti_id, TI.SUCCESS)

    rewrite(home, "a c")
    with session_scope(home.url) as session:
        run = session.get_one(DagRun, run_pk, with_for_update=True)
        model = session.get_one(DagModel, "changing")
        verify_integrity(session, run, structure_of(model), model.version_hash)
    states = home.states(run_pk)
    assert states == {"a": TI.SUCCESS, "b": TI.REMOVED, "c": TI.NONE}
    assert home.run(run_pk).version_hash == home.dag_model("changing").version_hash

    rewrite(home, "a b c")
    queued = home.schedule(run_pk)  # the version changed: schedule verifies integrity first
    assert queued_tasks(queued) == ["b", "c"]
    restored = home.ti(run_pk, "b")
    assert (restored.state, restored.try_number) == (TI.QUEUED, 2)  # tries go on counting


def test_a_task_gone_while_queued_is_removed_once_its_try_ends(home: Home) -> None:
    rewrite(home, "a b")
    run_pk = home.trigger("changing")
    queued = {e.task_id: e.ti_id for e in home.schedule(run_pk)}
    home.end_try(queued["a"], TI.SUCCESS)

    rewrite(home, "a")
    assert home.schedule(run_pk) == []
    # b was queued when it left the DAG: a worker may hold its try, so it keeps it...
    assert home.states(run_pk) == {"a": TI.SUCCESS, "b": TI.QUEUED}
    assert home.run_state(run_pk) == DagRunState.RUNNING
    home.end_try(queued["b"], TI.FAILED)
    home.schedule(run_pk)
    # ...and once that try ends, b is removed: the end of a gone task never counts.
    assert home.states(run_pk) == {"a": TI.SUCCESS, "b": TI.REMOVED}
    assert home.run_state(run_pk) == DagRunState.SUCCESS
    assert home.run(run_pk).version_hash == home.dag_model("changing").version_hash


def test_a_task_gone_before_it_ran_is_removed_and_does_not_count(home: Home) -> None:
    rewrite(home, "a")
    run_pk = home.trigger("changing")
    rewrite(home, "b")
    queued = home.schedule(run_pk)
    assert queued_tasks(queued) == ["b"]
    assert home.states(run_pk) == {"a": TI.REMOVED, "b": TI.QUEUED}
    home.end_try(queued[0].ti_id, TI.SUCCESS)
    home.schedule(run_pk)
    assert home.run_state(run_pk) == RUN.SUCCESS


def finished_chain(home: Home) -> int:
    """A successful run of ``chain`` with an XCom and a state value for every task."""
    home.write_dag(CHAIN)
    home.sync()
    run_pk = home.trigger("chain", run_id="r")
    for task_id in "abc":
        home.schedule(run_pk)
        home.end_try(home.ti(run_pk, task_id).id, TI.SUCCESS)
        with session_scope(home.url) as session:
            ids = {"dag_id": "chain", "run_id": "r", "task_id": task_id, "map_index": -1}
            session.add(XCom(**ids, key="return_value", value="1"))
            session.add(TaskStateValue(**ids, key="cursor", value='"x"'))
    home.schedule(run_pk)
    assert home.run_state(run_pk) == RUN.SUCCESS
    return run_pk


def stored_keys(home: Home, table: type[XCom] | type[TaskStateValue]) -> set[str]:
    with session_scope(home.url) as session:
        return set(session.scalars(select(table.task_id)))


def test_clear_starts_a_new_generation_keeping_the_try_number(home: Home) -> None:
    run_pk = finished_chain(home)
    before = home.ti(run_pk, "a")

    with session_scope(home.url) as session:
        assert clear_task_instances(session, home.run(run_pk), ["a"]) == 1

    ti = home.ti(run_pk, "a")
    assert (ti.state, ti.generation, ti.try_number) == (TI.NONE, before.generation + 1, 1)
    assert ti.max_tries == 2  # the try number goes on; the task gets its full retries again
    assert (ti.fence_token, ti.end_date, ti.error) == (None, None, None)
    assert home.ti(run_pk, "b").state == TI.SUCCESS
    assert stored_keys(home, XCom) == {"b", "c"}
    assert stored_keys(home, TaskStateValue) == {"b", "c"}
    run = home.run(run_pk)
    assert (run.state, run.end_date) == (RUN.QUEUED, None)

    [again] = home.schedule(run_pk)
    assert (again.task_id, again.try_number) == ("a", 2)
    assert home.run_state(run_pk) == RUN.RUNNING


def test_clear_with_keep_state_keeps_the_state_store_but_not_the_xcoms(home: Home) -> None:
    run_pk = finished_chain(home)
    with session_scope(home.url) as session:
        assert clear_task_instances(session, home.run(run_pk), keep_state=True) == 3
    assert home.states(run_pk) == dict.fromkeys("abc", TI.NONE)
    assert stored_keys(home, XCom) == set()
    assert stored_keys(home, TaskStateValue) == {"a", "b", "c"}


def test_clear_in_a_session_that_saw_the_old_state_still_clears(home: Home) -> None:
    home.write_dag(CHAIN)
    home.sync()
    run_pk = home.trigger("chain")
    [queued] = home.schedule(run_pk)
    run = home.run(run_pk)
    with session_scope(home.url) as session:
        loaded = session.get_one(TaskInstance, queued.ti_id)  # loaded while queued...
        transition_tis(session, [loaded.id], [TI.QUEUED], TI.RUNNING)  # ...then it moved
        assert clear_task_instances(session, run, ["a"]) == 1
    assert home.ti(run_pk, "a").state == TI.NONE


def test_a_clear_that_loses_its_race_keeps_the_results(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_pk = finished_chain(home)
    run = home.run(run_pk)

    def cleared_by_someone_else_first(session: Session, ti_ids: Any, *args: Any) -> int:
        # Another clear commits between this clear's read and its conditional write.
        transition_tis(session, ti_ids, [TI.SUCCESS], TI.NONE)
        return transition_tis(session, ti_ids, *args)

    monkeypatch.setattr(runs, "transition_tis", cleared_by_someone_else_first)
    with session_scope(home.url) as session:
        assert clear_task_instances(session, run, ["a"]) == 0
    assert stored_keys(home, XCom) == {"a", "b", "c"}
    assert home.run_state(run_pk) == RUN.SUCCESS


def test_the_run_state_moves_only_once_every_task_instance_finished(home: Home) -> None:
    home.write_dag(
        """
from tradewind import dag, task

@task
def left():
    pass

@task(retries=1)
def right():
    pass

@dag(dag_id="pair")
def pair():
    left()
    right()

pair()
"""
    )
    home.sync()
    run_pk = home.trigger("pair")
    queued = {e.task_id: e.ti_id for e in home.schedule(run_pk)}

    home.end_try(queued["left"], TI.FAILED)
    home.schedule(run_pk)
    assert home.run_state(run_pk) == RUN.RUNNING  # right is still queued

    home.end_try(queued["right"], TI.UP_FOR_RETRY, next_retry_at=utcnow() + dt.timedelta(hours=1))
    home.schedule(run_pk)
    assert home.run_state(run_pk) == RUN.RUNNING  # right has a try left

    [retry] = schedule_at(home, run_pk, utcnow() + dt.timedelta(hours=2))
    home.end_try(retry.ti_id, TI.SUCCESS)
    home.schedule(run_pk)
    assert home.run_state(run_pk) == RUN.FAILED


def test_a_failure_upstream_fails_the_rest_of_the_chain_then_the_run(home: Home) -> None:
    home.write_dag(CHAIN)
    home.sync()
    run_pk = home.trigger("chain")
    [a] = home.schedule(run_pk)
    home.end_try(a.ti_id, TI.FAILED)
    for _ in range(3):
        assert home.schedule(run_pk) == []
    assert home.states(run_pk) == {"a": TI.FAILED, "b": TI.UPSTREAM_FAILED, "c": TI.UPSTREAM_FAILED}
    assert home.run_state(run_pk) == RUN.FAILED


def test_a_run_of_a_dag_that_is_gone_is_not_scheduled(home: Home) -> None:
    home.write_dag(CHAIN)
    home.sync()
    run_pk = home.trigger("chain")
    with session_scope(home.url) as session:
        session.delete(session.get_one(DagModel, "chain"))
    assert home.schedule(run_pk) == []
    assert home.states(run_pk) == dict.fromkeys("abc", TI.NONE)
