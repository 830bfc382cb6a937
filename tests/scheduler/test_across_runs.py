"""Across runs and on a run's life: ``depends_on_past``, ``wait_for_downstream``, ``fail_fast``,
``dagrun_timeout`` and a task's ``end_date``, as the store acts on them (Airflow 3's rules)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import update
from sqlalchemy.orm import Session

from state.core.enums import DagRunState, TaskInstanceState
from state.core.models import BackfillDagRun, DagRun, TaskInstance, utcnow
from state.core.structure import structure_of
from state.engine.end_plan import FullPass, plan_end
from state.engine.past import waits_on_past
from state.engine.run_life import time_out_run, timed_out_runs
from state.engine.runs import create_run, get_dag_model
from state.engine.scheduling import CachedDag, schedule_run
from tests.scheduler.conftest import store_dag, task_spec, tis_of

TI = TaskInstanceState
DAY = dt.timedelta(days=1)
START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def run_on(session: Session, dag_id: str, day: int, run_type: str = "scheduled") -> DagRun:
    """A run whose logical date is ``day`` days after START."""
    end = START + day * DAY
    run = create_run(
        session,
        dag_id,
        run_id=f"{run_type}_{day}",
        run_type=run_type,
        data_interval=(end - DAY, end),
    )
    session.flush()
    return run


def one_pass(session: Session, run: DagRun) -> list[str]:
    session.refresh(run)
    queued = schedule_run(session, run, CachedDag.of(get_dag_model(session, run.dag_id)))
    session.flush()
    return [q.task_id for q in queued]


def set_state(session: Session, run: DagRun, task_id: str, state: TI) -> None:
    session.execute(
        update(TaskInstance)
        .where(TaskInstance.run_id == run.run_id, TaskInstance.task_id == task_id)
        .values(state=state)
    )


def states(session: Session, run: DagRun) -> dict[str, str]:
    return {task_id: str(ti.state) for task_id, ti in tis_of(session, run).items()}


def test_the_first_run_waits_for_nothing_and_the_next_waits_for_it(session: Session) -> None:
    store_dag(session, "past", {"t": task_spec(depends_on_past=True)})
    first, second = run_on(session, "past", 1), run_on(session, "past", 2)
    assert one_pass(session, first) == ["t"]
    assert one_pass(session, second) == []
    assert states(session, second) == {"t": "none"}
    assert waits_on_past(second.id)
    set_state(session, first, "t", TI.SUCCESS)
    assert one_pass(session, second) == ["t"]
    assert not waits_on_past(second.id)


def test_a_failure_in_the_previous_run_holds_the_task_and_a_skip_does_not(
    session: Session,
) -> None:
    store_dag(session, "past", {"t": task_spec(depends_on_past=True)})
    first, second = run_on(session, "past", 1), run_on(session, "past", 2)
    set_state(session, first, "t", TI.FAILED)
    assert one_pass(session, second) == []
    set_state(session, first, "t", TI.REMOVED)  # removed counts as not successful, as in Airflow
    assert one_pass(session, second) == []
    set_state(session, first, "t", TI.SKIPPED)
    assert one_pass(session, second) == ["t"]


def test_the_previous_run_is_the_one_before_by_logical_date_not_by_creation(
    session: Session,
) -> None:
    store_dag(session, "past", {"t": task_spec(depends_on_past=True)})
    later = run_on(session, "past", 3)
    earlier = run_on(session, "past", 1)
    assert one_pass(session, earlier) == ["t"]  # created second, but first by logical date
    assert one_pass(session, later) == []


def test_under_catchup_a_manual_run_is_not_the_previous_run(session: Session) -> None:
    store_dag(session, "past", {"t": task_spec(depends_on_past=True)}, catchup=True)
    scheduled = run_on(session, "past", 1)
    manual = run_on(session, "past", 2, run_type="manual")
    third = run_on(session, "past", 3)
    set_state(session, scheduled, "t", TI.SUCCESS)
    assert one_pass(session, third) == ["t"]  # the manual run's task never ran: not waited for
    assert one_pass(session, manual) == ["t"]


def test_the_first_run_of_a_backfill_waits_for_nothing_and_the_next_waits_for_it(
    session: Session,
) -> None:
    store_dag(session, "past", {"t": task_spec(depends_on_past=True)})
    set_state(session, run_on(session, "past", 1), "t", TI.FAILED)
    later, first = run_on(session, "past", 3, "backfill"), run_on(session, "past", 2, "backfill")
    session.add_all(BackfillDagRun(dag_run_id=run.id, backfill_id=7) for run in (first, later))
    assert one_pass(session, first) == ["t"]  # a failure before the backfill does not hold it
    assert one_pass(session, later) == []


def test_a_task_new_to_the_dag_waits_unless_it_ignores_its_first_past(session: Session) -> None:
    store_dag(session, "grows", {"old": task_spec()})
    run_on(session, "grows", 1)
    tasks = {
        "strict": task_spec(depends_on_past=True),
        "lenient": task_spec(depends_on_past=True, ignore_first_depends_on_past=True),
    }
    store_dag(session, "grows", tasks)
    second = run_on(session, "grows", 2)
    assert one_pass(session, second) == ["lenient"]  # never run before: nothing to wait for
    third = run_on(session, "grows", 3)
    assert one_pass(session, third) == []  # the second run has it now: waited for


def test_a_task_without_depends_on_past_never_waits(session: Session) -> None:
    store_dag(session, "free", {"t": task_spec()})
    run_on(session, "free", 1)
    assert one_pass(session, run_on(session, "free", 2)) == ["t"]


def test_wait_for_downstream_waits_for_the_previous_runs_direct_downstream(
    session: Session,
) -> None:
    tasks = {
        "t": task_spec(depends_on_past=True, wait_for_downstream=True, downstream=["u"]),
        "u": task_spec(["t"], downstream=["v"]),
        "v": task_spec(["u"]),
    }
    store_dag(session, "wfd", tasks)
    first, second = run_on(session, "wfd", 1), run_on(session, "wfd", 2)
    set_state(session, first, "t", TI.SUCCESS)
    set_state(session, first, "u", TI.RUNNING)
    assert one_pass(session, second) == []
    set_state(session, first, "u", TI.SUCCESS)  # v, not direct downstream, is not waited for
    assert one_pass(session, second) == ["t"]


def test_a_supervisor_never_hands_its_slot_to_a_successor_that_depends_on_past(
    session: Session,
) -> None:
    tasks = {"a": task_spec(downstream=["b"]), "b": task_spec(["a"], depends_on_past=True)}
    store_dag(session, "hand", tasks)
    structure = structure_of(get_dag_model(session, "hand"))
    assert plan_end(structure, "a", succeeded=True) == FullPass(None)


def test_fail_fast_fails_running_tries_and_skips_what_has_not_run(session: Session) -> None:
    tasks = {
        "bad": task_spec(),
        "busy": task_spec(),
        "waiting": task_spec(["busy"]),
        "cleanup": task_spec(["busy"], is_teardown=True, trigger_rule="all_done_setup_success"),
    }
    store_dag(session, "ff", tasks, fail_fast=True)
    run = run_on(session, "ff", 1)
    one_pass(session, run)
    set_state(session, run, "bad", TI.FAILED)
    set_state(session, run, "busy", TI.RUNNING)
    one_pass(session, run)
    assert states(session, run) == {
        "bad": "failed",
        "busy": "failed",
        "waiting": "skipped",
        "cleanup": "queued",  # a teardown still runs
    }


def test_without_fail_fast_a_failure_leaves_the_others_running(session: Session) -> None:
    store_dag(session, "slow", {"bad": task_spec(), "busy": task_spec()})
    run = run_on(session, "slow", 1)
    one_pass(session, run)
    set_state(session, run, "bad", TI.FAILED)
    set_state(session, run, "busy", TI.RUNNING)
    one_pass(session, run)
    assert states(session, run) == {"bad": "failed", "busy": "running"}


def test_a_run_past_its_dagrun_timeout_fails_and_its_unfinished_tasks_are_skipped(
    session: Session,
) -> None:
    tasks = {"done": task_spec(), "busy": task_spec(), "later": task_spec(["busy"])}
    store_dag(session, "slow", tasks, dagrun_timeout_seconds=60)
    store_dag(session, "free", {"t": task_spec()})
    run, other = run_on(session, "slow", 1), run_on(session, "free", 1)
    one_pass(session, run)
    one_pass(session, other)
    set_state(session, run, "done", TI.SUCCESS)
    set_state(session, run, "busy", TI.RUNNING)
    now = utcnow()
    assert timed_out_runs(session, now) == []
    hour_ago = now - dt.timedelta(hours=1)
    session.execute(update(DagRun).values(start_date=hour_ago))
    [expired] = timed_out_runs(session, now)  # the DAG without a timeout is never listed
    assert (expired.run_pk, expired.started) == (run.id, hour_ago)
    assert time_out_run(session, run.id, now)
    session.refresh(run)
    assert run.state == DagRunState.FAILED
    assert states(session, run) == {"done": "success", "busy": "skipped", "later": "skipped"}
    assert not time_out_run(session, run.id, now)  # no longer running


def test_a_task_past_its_end_date_gets_no_task_instance(session: Session) -> None:
    end = (START + 2 * DAY).isoformat()
    store_dag(session, "ends", {"old": task_spec(end_date=end), "new": task_spec(["old"])})
    assert set(states(session, run_on(session, "ends", 2))) == {"old", "new"}
    late = run_on(session, "ends", 3)
    assert set(states(session, late)) == {"new"}
    assert one_pass(session, late) == ["new"]  # nothing upstream to wait for, as if removed
    assert set(states(session, run_on(session, "ends", 4, "backfill"))) == {"old", "new"}


def test_a_run_after_every_tasks_end_date_has_nothing_to_do_and_succeeds(session: Session) -> None:
    store_dag(session, "over", {"t": task_spec(end_date=START.isoformat())})
    run = run_on(session, "over", 5, run_type="manual")
    assert states(session, run) == {}
    one_pass(session, run)
    assert run.state == DagRunState.SUCCESS
