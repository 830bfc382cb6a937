"""A run's state comes from its finished task instances only; removed ones never count; getters
never write (DESIGN.md §4, apache/airflow#7939 and #13151)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import update
from sqlalchemy.orm import Session

from state.core.enums import DagRunState, TaskInstanceState
from state.core.models import DagRun, TaskInstance, utcnow
from state.core.structure import structure_of
from state.engine.liveness import find_stalled_queued, find_zombies
from state.engine.readiness import TIRow, evaluate, run_outcome
from state.engine.runs import get_dag_model
from state.engine.scheduling import CachedDag, schedule_run, schedule_run_by_pk
from tests.scheduler.conftest import (
    StatementLog,
    new_run,
    store_dag,
    task_spec,
    tis_of,
    wide,
)

TI = TaskInstanceState


def set_states(session: Session, run: DagRun, **states: TI) -> None:
    """Put task instances in ``states`` (tries under way: the run has started)."""
    session.execute(update(DagRun).where(DagRun.id == run.id).values(state=DagRunState.RUNNING))
    for task_id, state in states.items():
        session.execute(
            update(TaskInstance)
            .where(TaskInstance.run_id == run.run_id, TaskInstance.task_id == task_id)
            .values(state=state, try_number=1)
        )


def run_state(session: Session, run: DagRun) -> str:
    session.refresh(run)
    return str(run.state)


def one_pass(session: Session, run: DagRun) -> list[str]:
    model = get_dag_model(session, run.dag_id)
    queued = schedule_run(session, run, CachedDag.of(model))
    session.flush()
    return [q.task_id for q in queued]


def test_a_failed_task_leaves_the_run_running_while_other_work_is_pending(session: Session) -> None:
    store_dag(session, "d", wide(3))
    run = new_run(session, "d")
    set_states(session, run, t0=TI.FAILED, t1=TI.RUNNING, t2=TI.UP_FOR_RETRY)
    one_pass(session, run)
    assert run_state(session, run) == DagRunState.RUNNING

    set_states(session, run, t1=TI.SUCCESS)
    one_pass(session, run)
    assert run_state(session, run) == DagRunState.RUNNING  # t2 still has a try left

    set_states(session, run, t2=TI.FAILED)
    one_pass(session, run)
    assert run_state(session, run) == DagRunState.FAILED


def test_a_retry_not_yet_due_keeps_the_run_running(session: Session) -> None:
    store_dag(session, "d", wide(1))
    run = new_run(session, "d")
    later = utcnow() + dt.timedelta(hours=1)
    set_states(session, run, t0=TI.UP_FOR_RETRY)
    session.execute(update(TaskInstance).values(next_retry_at=later))
    assert one_pass(session, run) == []
    assert run_state(session, run) == DagRunState.RUNNING
    assert tis_of(session, run)["t0"].state == TI.UP_FOR_RETRY


def test_removed_task_instances_neither_finish_nor_fail_a_run(session: Session) -> None:
    store_dag(session, "d", wide(2))
    run = new_run(session, "d")
    set_states(session, run, t0=TI.SUCCESS, t1=TI.REMOVED)
    one_pass(session, run)
    assert run_state(session, run) == DagRunState.SUCCESS
    assert run_outcome([TI.REMOVED, TI.REMOVED]) == "success"
    assert run_outcome([TI.REMOVED, TI.NONE]) is None


def test_a_removed_upstream_neither_blocks_nor_holds_a_slot(session: Session) -> None:
    tasks = {"a": task_spec(), "b": task_spec(["a"]), "c": task_spec()}
    store_dag(session, "d", tasks, max_active_tasks=1)
    run = new_run(session, "d")
    set_states(session, run, a=TI.REMOVED, c=TI.SUCCESS)
    assert one_pass(session, run) == ["b"]


def test_a_task_gone_from_the_dag_while_it_ran_is_not_retried(session: Session) -> None:
    store_dag(session, "d", wide(2))
    run = new_run(session, "d")
    set_states(session, run, t0=TI.SUCCESS, t1=TI.RUNNING)
    store_dag(session, "d", wide(1))  # t1 is gone from the new version
    one_pass(session, run)
    assert tis_of(session, run)["t1"].state == TI.RUNNING  # a running try is left to finish
    assert run_state(session, run) == DagRunState.RUNNING

    set_states(session, run, t1=TI.UP_FOR_RETRY)  # never retried: the DAG no longer has it
    assert one_pass(session, run) == []
    assert tis_of(session, run)["t1"].state == TI.REMOVED
    assert run_state(session, run) == DagRunState.SUCCESS


def test_getters_never_write(session: Session, count_statements: StatementLog) -> None:
    store_dag(session, "d", wide(3))
    run = new_run(session, "d")
    set_states(session, run, t0=TI.RUNNING, t1=TI.QUEUED, t2=TI.SUCCESS)
    session.commit()
    count_statements.statements.clear()

    old = utcnow() + dt.timedelta(days=1)
    find_zombies(session, old)
    find_stalled_queued(session, old)
    model = get_dag_model(session, "d")
    rows = [TIRow(ti.id, ti.task_id, ti.state) for ti in tis_of(session, run).values()]
    evaluate(structure_of(model), rows)
    run_outcome([row.state for row in rows])
    session.rollback()
    assert count_statements.statements, "the readers ran no SQL at all"
    assert count_statements.writes == []


def test_a_pass_with_nothing_to_do_writes_nothing(
    session: Session, count_statements: StatementLog
) -> None:
    store_dag(session, "d", wide(3))
    run = new_run(session, "d")
    set_states(session, run, t0=TI.RUNNING, t1=TI.RUNNING, t2=TI.SUCCESS)
    session.execute(update(DagRun).values(state=DagRunState.RUNNING))
    session.commit()
    count_statements.statements.clear()
    assert schedule_run_by_pk(session, run.id) == []
    session.commit()
    assert count_statements.writes == []


def test_a_run_whose_tasks_all_left_the_dag_before_it_started_succeeds(session: Session) -> None:
    store_dag(session, "d", wide(2))
    run = new_run(session, "d")
    store_dag(session, "d", {"other": task_spec(["t0"])})  # t0, t1 gone; other waits on t0
    session.commit()
    assert one_pass(session, run) == ["other"]  # a removed upstream does not hold it back
    set_states(session, run, other=TI.SUCCESS)
    one_pass(session, run)
    assert {ti.state for ti in tis_of(session, run).values()} == {TI.REMOVED, TI.SUCCESS}
    assert run_state(session, run) == DagRunState.SUCCESS


def test_a_run_that_never_queued_a_task_can_still_end(session: Session) -> None:
    store_dag(session, "d", wide(2))
    run = new_run(session, "d")
    store_dag(session, "d", {})  # every task left the DAG before the run started
    session.commit()
    assert one_pass(session, run) == []
    assert run_state(session, run) == DagRunState.SUCCESS
    assert run.start_date is not None
