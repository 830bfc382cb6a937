"""The loop passes over a run only when something may have changed in it since its last pass."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from types import SimpleNamespace

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session

from scheduler import loop
from scheduler.loop import Scheduler
from scheduler.run_watch import RunWatch
from state.core.enums import TaskInstanceState
from state.core.models import DagRun, TaskInstance, utcnow
from state.engine.scheduling import try_schedule_run
from tests.scheduler.conftest import new_run, store_dag, task_spec
from tests.state.harness import tradewind_home

TI = TaskInstanceState


def to_pass(watch: RunWatch, session: Session) -> list[int]:
    return [view.run_pk for view in watch.to_pass(session, utcnow())]


def pass_all(watch: RunWatch, session: Session) -> None:
    for view in watch.to_pass(session, utcnow()):
        if try_schedule_run(session, view.run_pk) is not None:
            watch.passed(view)
    session.commit()


def set_state(session: Session, task_id: str, state: TI, **values: object) -> None:
    session.execute(
        update(TaskInstance).where(TaskInstance.task_id == task_id).values(state=state, **values)
    )
    session.commit()


def test_a_run_is_passed_again_only_once_something_in_it_moved(session: Session) -> None:
    store_dag(session, "d", {"a": task_spec(), "b": task_spec(["a"])})
    run = new_run(session, "d")
    session.commit()
    watch = RunWatch()
    assert to_pass(watch, session) == [run.id]  # queued: waiting to start
    pass_all(watch, session)  # a is queued, the run runs
    assert to_pass(watch, session) == [run.id]  # the pass itself moved things: look once more
    pass_all(watch, session)
    assert to_pass(watch, session) == []  # nothing moved since: skipped

    set_state(session, "a", TI.RUNNING)
    assert to_pass(watch, session) == []  # a claim (queued -> running) decides nothing...
    set_state(session, "a", TI.SUCCESS)
    assert to_pass(watch, session) == [run.id]  # ...a finished: b may be ready
    pass_all(watch, session)
    assert to_pass(watch, session) == [run.id]


def test_waiting_slots_due_retries_and_new_versions_are_always_looked_at(session: Session) -> None:
    store_dag(session, "d", {"a": task_spec()})
    run = new_run(session, "d")
    session.execute(update(DagRun).values(state="running"))
    session.commit()
    watch = RunWatch()
    pass_all(watch, session)
    pass_all(watch, session)
    assert to_pass(watch, session) == []

    set_state(session, "a", TI.UP_FOR_RETRY, next_retry_at=utcnow() + dt.timedelta(hours=1))
    pass_all(watch, session)
    assert to_pass(watch, session) == []  # the retry is not due yet
    set_state(session, "a", TI.UP_FOR_RETRY, next_retry_at=utcnow() - dt.timedelta(seconds=1))
    assert to_pass(watch, session) == [run.id]

    set_state(session, "a", TI.SCHEDULED)
    pass_all(watch, session)
    set_state(session, "a", TI.SCHEDULED)  # no slot was free: it waits in scheduled
    assert to_pass(watch, session) == [run.id]

    set_state(session, "a", TI.RUNNING)
    pass_all(watch, session)
    store_dag(session, "d", {"a": task_spec(), "b": task_spec()})
    session.commit()
    assert to_pass(watch, session) == [run.id]


def test_a_run_held_by_another_process_is_looked_at_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with tradewind_home(tmp_path, monkeypatch) as home:
        home.write_dag(ONE_TASK)
        home.sync()
        run_pk = home.trigger("one")
        scheduler = Scheduler(home.settings, app=SimpleNamespace(main="stub"))  # type: ignore[arg-type]
        monkeypatch.setattr(loop, "publish_many", lambda app, ready: len(ready))
        real = loop.try_schedule_run
        monkeypatch.setattr(loop, "try_schedule_run", lambda session, pk: None)  # lock elsewhere
        assert scheduler.run_once().runs == 0
        monkeypatch.setattr(loop, "try_schedule_run", real)
        stats = scheduler.run_once()
        assert (stats.runs, stats.queued) == (1, 1)  # not taken for done: passed now
        assert home.run_state(run_pk) == "running"


ONE_TASK = """
from tradewind import dag, task

@task
def work():
    pass

@dag(dag_id="one")
def one():
    work()

one()
"""
