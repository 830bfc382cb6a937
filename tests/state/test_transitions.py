"""The one writer of state columns: the transition table holds, and every write is conditional.

An allowed move happens, a move the table does not list raises before any SQL runs, a writer that
lost a race gets a row count of 0 instead of overwriting the winner, and a try's fenced writes are
refused once the try no longer holds its task instance.
"""

from __future__ import annotations

import datetime as dt
import itertools

import pytest
from sqlalchemy import func, select

from state.core.db import session_scope
from state.core.enums import (
    DAG_RUN_TRANSITIONS,
    FINISHED,
    TASK_INSTANCE_TRANSITIONS,
    DagRunState,
    TaskInstanceState,
)
from state.core.migrate import upgrade
from state.core.models import DagRun, TaskInstance, TaskStateValue, XCom, utcnow
from state.core.structure import structure_of
from state.core.transitions import (
    Fence,
    IllegalTransition,
    TryFenced,
    assert_fence,
    transition_run,
    transition_tis,
    transition_tis_returning,
)
from state.engine.liveness import give_up_try
from state.engine.runs import clear_task_instances
from state.records.values import TIKey, delete_states, read_xcom, write_state, write_xcom
from tests.state.harness import Home

TI = TaskInstanceState
RUN = DagRunState

ALLOWED_TI = [(a, b) for a, targets in TASK_INSTANCE_TRANSITIONS.items() for b in sorted(targets)]
REFUSED_TI = [(a, b) for a, b in itertools.product(TI, TI) if b not in TASK_INSTANCE_TRANSITIONS[a]]
ALLOWED_RUN = [(a, b) for a, targets in DAG_RUN_TRANSITIONS.items() for b in sorted(targets)]
REFUSED_RUN = [(a, b) for a, b in itertools.product(RUN, RUN) if b not in DAG_RUN_TRANSITIONS[a]]
_counter = itertools.count()


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> str:
    made = f"sqlite:///{tmp_path_factory.mktemp('transitions') / 'tradewind.db'}"
    upgrade(made)
    return made


def add_ti(
    url: str, state: TaskInstanceState, try_number: int = 1, token: str | None = "tok"
) -> int:
    """A task instance row of its own (a fresh run id), in ``state``."""
    with session_scope(url) as session:
        ti = TaskInstance(
            dag_id="d",
            run_id=f"r{next(_counter)}",
            task_id="t",
            map_index=-1,
            state=state,
            try_number=try_number,
            max_tries=2,
            fence_token=token,
        )
        session.add(ti)
        session.flush()
        return ti.id


def add_run(url: str, state: DagRunState) -> int:
    with session_scope(url) as session:
        run = DagRun(dag_id="d", run_id=f"run{next(_counter)}", state=state)
        session.add(run)
        session.flush()
        return run.id


def ti_row(url: str, ti_id: int) -> TaskInstance:
    with session_scope(url) as session:
        return session.get_one(TaskInstance, ti_id)


def test_the_tables_name_every_state() -> None:
    assert set(TASK_INSTANCE_TRANSITIONS) == set(TI)
    assert set(DAG_RUN_TRANSITIONS) == set(RUN)
    # A finished task instance leaves its state only by a clear (to none) or a DAG change.
    for state in FINISHED:
        assert TASK_INSTANCE_TRANSITIONS[state] <= {TI.NONE, TI.REMOVED}


@pytest.mark.parametrize(("source", "target"), ALLOWED_TI, ids=lambda s: str(s))
def test_every_allowed_task_instance_transition_moves_the_row(
    url: str, source: TaskInstanceState, target: TaskInstanceState
) -> None:
    ti_id = add_ti(url, source)
    with session_scope(url) as session:
        moved = transition_tis(session, [ti_id], [source], target, {"error": "why"})
    assert moved == 1
    row = ti_row(url, ti_id)
    assert (row.state, row.error) == (target, "why")


@pytest.mark.parametrize(("source", "target"), REFUSED_TI, ids=lambda s: str(s))
def test_a_disallowed_task_instance_transition_raises_and_writes_nothing(
    url: str, source: TaskInstanceState, target: TaskInstanceState
) -> None:
    ti_id = add_ti(url, source)
    with pytest.raises(IllegalTransition, match=f"{source} -> {target}"), session_scope(url) as s:
        transition_tis(s, [ti_id], [source], target)
    assert ti_row(url, ti_id).state == source


def test_an_illegal_transition_raises_even_with_no_rows_to_move(url: str) -> None:
    with session_scope(url) as session:
        with pytest.raises(IllegalTransition):
            transition_tis(session, [], [TI.NONE], TI.SUCCESS)
        with pytest.raises(IllegalTransition):
            transition_tis_returning(session, [], [TI.NONE], TI.RUNNING)


def test_one_illegal_source_among_several_refuses_the_whole_move(url: str) -> None:
    ti_id = add_ti(url, TI.SCHEDULED)
    with pytest.raises(IllegalTransition, match="success -> queued"), session_scope(url) as s:
        transition_tis(s, [ti_id], [TI.SCHEDULED, TI.SUCCESS], TI.QUEUED)
    assert ti_row(url, ti_id).state == TI.SCHEDULED


@pytest.mark.parametrize(("source", "target"), ALLOWED_RUN, ids=lambda s: str(s))
def test_every_allowed_run_transition_moves_the_run(
    url: str, source: DagRunState, target: DagRunState
) -> None:
    run_pk = add_run(url, source)
    with session_scope(url) as session:
        assert transition_run(session, run_pk, [source], target) is True
    with session_scope(url) as session:
        assert session.get_one(DagRun, run_pk).state == target


@pytest.mark.parametrize(("source", "target"), REFUSED_RUN, ids=lambda s: str(s))
def test_a_disallowed_run_transition_raises(
    url: str, source: DagRunState, target: DagRunState
) -> None:
    run_pk = add_run(url, source)
    with pytest.raises(IllegalTransition), session_scope(url) as session:
        transition_run(session, run_pk, [source], target)
    with session_scope(url) as session:
        assert session.get_one(DagRun, run_pk).state == source


def test_a_conditional_update_loses_the_race_when_the_state_changed(url: str) -> None:
    ti_id = add_ti(url, TI.QUEUED)
    # Two claimers both saw "queued"; the first one's UPDATE commits first.
    with session_scope(url) as session:
        assert transition_tis(session, [ti_id], [TI.QUEUED], TI.RUNNING, {"pid": 1}) == 1
    with session_scope(url) as session:
        assert transition_tis(session, [ti_id], [TI.QUEUED], TI.RUNNING, {"pid": 2}) == 0
        assert transition_tis_returning(session, [ti_id], [TI.QUEUED], TI.RUNNING) == []
    row = ti_row(url, ti_id)
    assert (row.state, row.pid) == (TI.RUNNING, 1)


def test_a_claim_of_another_try_moves_nothing(url: str) -> None:
    ti_id = add_ti(url, TI.QUEUED, try_number=2)
    with session_scope(url) as session:
        assert transition_tis(session, [ti_id], [TI.QUEUED], TI.RUNNING, try_number=1) == 0
        assert transition_tis(session, [ti_id], [TI.QUEUED], TI.RUNNING, try_number=2) == 1


def test_a_run_transition_loses_the_race_when_the_run_moved(url: str) -> None:
    run_pk = add_run(url, RUN.RUNNING)
    with session_scope(url) as session:
        assert transition_run(session, run_pk, [RUN.RUNNING], RUN.SUCCESS)
    with session_scope(url) as session:
        assert transition_run(session, run_pk, [RUN.RUNNING], RUN.FAILED) is False
        assert session.get_one(DagRun, run_pk).state == RUN.SUCCESS


def test_returning_gives_the_rows_as_they_are_after_the_update(url: str) -> None:
    ti_id = add_ti(url, TI.SCHEDULED, try_number=3)
    with session_scope(url) as session:
        session.get_one(TaskInstance, ti_id)  # an identity-mapped copy that the UPDATE outdates
        values = {"try_number": TaskInstance.try_number + 1}
        [moved] = transition_tis_returning(session, [ti_id], [TI.SCHEDULED], TI.QUEUED, values)
        assert (moved.state, moved.try_number) == (TI.QUEUED, 4)


@pytest.mark.parametrize(
    "fence",
    [Fence(0, 1, "other-token"), Fence(0, 2, "tok"), Fence(0, 1, "")],
    ids=["wrong-token", "wrong-try", "empty-token"],
)
def test_a_fenced_final_write_with_a_wrong_token_or_try_is_refused(url: str, fence: Fence) -> None:
    ti_id = add_ti(url, TI.RUNNING, try_number=1, token="tok")
    wrong = Fence(ti_id, fence.try_number, fence.token)
    with session_scope(url) as session:
        assert transition_tis(session, [ti_id], [TI.RUNNING], TI.SUCCESS, fence=wrong) == 0
        with pytest.raises(TryFenced):
            assert_fence(session, wrong)
    assert ti_row(url, ti_id).state == TI.RUNNING
    with session_scope(url) as session:
        right = Fence(ti_id, 1, "tok")
        assert transition_tis(session, [ti_id], [TI.RUNNING], TI.SUCCESS, fence=right) == 1


def test_assert_fence_heartbeats_the_try_that_holds_the_task_instance(url: str) -> None:
    ti_id = add_ti(url, TI.RUNNING, token="tok")
    before = utcnow()
    with session_scope(url) as session:
        assert_fence(session, Fence(ti_id, 1, "tok"))
    heartbeat = ti_row(url, ti_id).last_heartbeat
    assert heartbeat is not None and heartbeat >= before


def test_assert_fence_refuses_a_try_that_is_no_longer_running(url: str) -> None:
    ti_id = add_ti(url, TI.UP_FOR_RETRY, token="tok")
    with pytest.raises(TryFenced, match=f"task instance {ti_id}"), session_scope(url) as s:
        assert_fence(s, Fence(ti_id, 1, "tok"))


def test_fenced_xcom_and_state_writes_are_refused_and_leave_nothing(url: str) -> None:
    ti_id = add_ti(url, TI.RUNNING, token="tok")
    with session_scope(url) as session:
        row = session.get_one(TaskInstance, ti_id)
        key = TIKey(row.dag_id, row.run_id, row.task_id)
    stale = Fence(ti_id, 1, "stale")
    writes = [
        lambda s: write_xcom(s, stale, key, "return_value", "1"),
        lambda s: write_state(s, stale, key, "k", "1", None),
        lambda s: delete_states(s, stale, key),
    ]
    for write in writes:
        with pytest.raises(TryFenced), session_scope(url) as session:
            write(session)
    with session_scope(url) as session:
        assert read_xcom(session, key, "return_value") is None
        count = (
            select(func.count())
            .select_from(TaskStateValue)
            .where(TaskStateValue.run_id == key.run_id)
        )
        assert session.scalar(count) == 0
    # The holder's own writes go through.
    with session_scope(url) as session:
        write_xcom(session, Fence(ti_id, 1, "tok"), key, "return_value", "1")
    with session_scope(url) as session:
        assert read_xcom(session, key, "return_value") == "1"


DAG_SOURCE = """
from tradewind import dag, task

@task(retries=1)
def work():
    return 1

@dag(dag_id="fenced")
def fenced():
    work()

fenced()
"""


def running_try(home: Home) -> tuple[int, Fence]:
    """A run of the ``fenced`` DAG whose only task instance is claimed by a supervisor."""
    home.write_dag(DAG_SOURCE)
    home.sync()
    run_pk = home.trigger("fenced")
    [enqueue] = home.schedule(run_pk)
    fence = Fence(enqueue.ti_id, enqueue.try_number, "the-claim")
    values = {"fence_token": fence.token, "last_heartbeat": utcnow()}
    with session_scope(home.url) as session:
        moved = transition_tis(
            session, [fence.ti_id], [TI.QUEUED], TI.RUNNING, values, try_number=fence.try_number
        )
        assert moved == 1
        assert_fence(session, fence)
    return run_pk, fence


def test_assert_fence_raises_try_fenced_after_a_clear(home: Home) -> None:
    run_pk, fence = running_try(home)
    with session_scope(home.url) as session:
        assert clear_task_instances(session, home.run(run_pk)) == 1

    with pytest.raises(TryFenced), session_scope(home.url) as session:
        assert_fence(session, fence)
    # ...and the try's final write is refused too: the clear stands.
    with session_scope(home.url) as session:
        assert transition_tis(session, [fence.ti_id], [TI.RUNNING], TI.SUCCESS, fence=fence) == 0
    ti = home.ti(run_pk, "work")
    assert (ti.state, ti.fence_token, ti.try_number) == (TI.NONE, None, 1)


def test_a_late_write_of_a_try_given_up_as_a_zombie_is_refused(home: Home) -> None:
    run_pk, fence = running_try(home)
    now = utcnow()
    tasks = structure_of(home.dag_model("fenced")).tasks
    with session_scope(home.url) as session:
        ti = session.get_one(TaskInstance, fence.ti_id)
        assert give_up_try(session, ti, "zombie", now, tasks) == TI.UP_FOR_RETRY

    key = TIKey("fenced", home.run(run_pk).run_id, "work")
    with pytest.raises(TryFenced), session_scope(home.url) as session:
        write_xcom(session, fence, key, "return_value", "1")
    with session_scope(home.url) as session:
        assert session.scalar(select(func.count()).select_from(XCom)) == 0
        ti = session.get_one(TaskInstance, fence.ti_id)
        assert ti.state == TI.UP_FOR_RETRY
        assert ti.next_retry_at is not None and ti.next_retry_at >= now + dt.timedelta(seconds=299)
