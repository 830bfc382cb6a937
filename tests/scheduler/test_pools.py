"""Pools, max_active_tasks and max_active_runs hold across runs, DAGs and schedulers.

Limits are counted from the task instances and runs themselves (state/engine/pools.py), so a slot is
free again as soon as its try ends, whichever way it ends.
"""

from __future__ import annotations

import datetime as dt
import random
import threading
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from state.core.db import session_factory, session_scope
from state.core.enums import ACTIVE, DagRunState, TaskInstanceState
from state.core.models import DagRun, TaskInstance, utcnow
from state.core.transitions import Fence, transition_tis
from state.engine.liveness import fail_queued, give_up_try
from state.engine.pools import delete_pool, pool_usage, set_pool
from state.engine.runs import clear_task_instances
from state.engine.scheduling import schedule_run_by_pk
from tests.scheduler.conftest import create_schema, new_run, store_dag, wide

TI = TaskInstanceState
PG_DATABASE_PREFIX = "tw_pools_"


def schedule(url: str, run_pk: int) -> list[int]:
    with session_scope(url) as session:
        return [e.ti_id for e in schedule_run_by_pk(session, run_pk)]


def active(url: str, **where: str) -> int:
    with session_scope(url) as session:
        query = select(func.count()).where(TaskInstance.state.in_(list(ACTIVE)))
        for column, value in where.items():
            query = query.where(getattr(TaskInstance, column) == value)
        return int(session.scalar(query) or 0)


def claim(session: Session, ti_id: int) -> Fence:
    token = "t"
    session.execute(
        update(TaskInstance)
        .where(TaskInstance.id == ti_id)
        .values(state=TI.RUNNING, fence_token=token, last_heartbeat=utcnow())
    )
    try_number = session.scalar(select(TaskInstance.try_number).where(TaskInstance.id == ti_id))
    return Fence(ti_id, int(try_number or 0), token)


def runs(url: str, dag_id: str, count: int, **dag: object) -> list[int]:
    with session_scope(url) as session:
        store_dag(session, dag_id, wide(4, pool="p"), **dag)
        return [new_run(session, dag_id, f"r{n}").id for n in range(count)]


def test_a_pool_caps_queued_and_running_across_dags(sqlite_url: str) -> None:
    with session_scope(sqlite_url) as session:
        set_pool(session, "p", 3)
    [one], [two] = runs(sqlite_url, "one", 1), runs(sqlite_url, "two", 1)
    assert len(schedule(sqlite_url, one)) == 3
    assert schedule(sqlite_url, two) == []
    with session_scope(sqlite_url) as session:
        set_pool(session, "p", 5)
        assert pool_usage(session) == [("default_pool", 128, 0), ("p", 5, 3)]
    assert len(schedule(sqlite_url, two)) == 2
    assert active(sqlite_url, pool="p") == 5


End = Callable[[Session, int], None]


def succeed(session: Session, ti_id: int) -> None:
    fence = claim(session, ti_id)
    assert transition_tis(session, [ti_id], [TI.RUNNING], TI.SUCCESS, fence=fence) == 1


def zombie(session: Session, ti_id: int) -> None:
    ti = session.get_one(TaskInstance, ti_id)
    claim(session, ti_id)
    session.refresh(ti)
    assert give_up_try(session, ti, "zombie", utcnow(), {}) == TI.FAILED


def stalled(session: Session, ti_id: int) -> None:
    assert fail_queued(session, session.get_one(TaskInstance, ti_id), "lost", utcnow())


def cleared(session: Session, ti_id: int) -> None:
    ti = session.get_one(TaskInstance, ti_id)
    run = session.scalars(select(DagRun).filter_by(run_id=ti.run_id)).one()
    assert clear_task_instances(session, run, [ti.task_id]) == 1


@pytest.mark.parametrize("end", [succeed, zombie, stalled, cleared])
def test_every_way_a_try_ends_frees_its_slots(sqlite_url: str, end: End) -> None:
    with session_scope(sqlite_url) as session:
        set_pool(session, "p", 2)
    first, second = runs(sqlite_url, "d", 2, max_active_tasks=3)
    queued = schedule(sqlite_url, first)
    assert len(queued) == 2  # the pool is the tighter limit
    assert schedule(sqlite_url, second) == []
    with session_scope(sqlite_url) as session:
        end(session, queued[0])
    assert len(schedule(sqlite_url, second)) == 1
    assert active(sqlite_url, pool="p") == 2


def test_max_active_runs_keeps_later_runs_queued(sqlite_url: str) -> None:
    with session_scope(sqlite_url) as session:
        set_pool(session, "p", 10)
    first, second = runs(sqlite_url, "d", 2, max_active_runs=1)
    assert len(schedule(sqlite_url, first)) == 4
    assert schedule(sqlite_url, second) == []
    with session_scope(sqlite_url) as session:
        assert session.get_one(DagRun, second).state == DagRunState.QUEUED
        for ti in session.scalars(select(TaskInstance).filter_by(run_id="r0")):
            succeed(session, ti.id)
    assert schedule(sqlite_url, first) == []
    assert len(schedule(sqlite_url, second)) == 4
    with session_scope(sqlite_url) as session:
        states = dict(session.execute(select(DagRun.run_id, DagRun.state)).all())
    assert states == {"r0": DagRunState.SUCCESS, "r1": DagRunState.RUNNING}


def test_a_task_of_a_deleted_pool_waits_in_scheduled(sqlite_url: str) -> None:
    with session_scope(sqlite_url) as session:
        set_pool(session, "p", 1)
    [run] = runs(sqlite_url, "d", 1)
    with session_scope(sqlite_url) as session:
        assert delete_pool(session, "p")
    assert schedule(sqlite_url, run) == []
    with session_scope(sqlite_url) as session:
        states = set(session.scalars(select(TaskInstance.state)))
        assert states == {TI.SCHEDULED}
        with pytest.raises(ValueError, match="cannot be deleted"):
            delete_pool(session, "default_pool")


@pytest.fixture
def pg(pg_url: str) -> Iterator[str]:
    yield create_schema(pg_url)


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_schedulers_racing_on_postgresql_never_overfill_a_pool_or_a_dag(pg: str) -> None:
    with session_scope(pg) as session:
        set_pool(session, "p", 5)
    one = runs(pg, "one", 10, max_active_tasks=100)
    two = runs(pg, "two", 10, max_active_tasks=3)
    everything = one + two
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def scheduler(seed: int) -> None:
        order = random.Random(seed).sample(everything, len(everything))
        start.wait()
        try:
            for _ in range(3):
                for run_pk in order:
                    schedule(pg, run_pk)
        except BaseException as error:  # handed to the test thread, which fails on it
            errors.append(error)

    threads = [threading.Thread(target=scheduler, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert active(pg, pool="p") == 5
    assert active(pg, dag_id="two") <= 3
    with session_factory(pg)() as session:
        tries = session.scalars(select(TaskInstance.try_number).where(TaskInstance.try_number > 0))
        assert set(tries) == {1}  # and no try queued twice


def test_limits_hold_for_retries_too(sqlite_url: str) -> None:
    with session_scope(sqlite_url) as session:
        set_pool(session, "p", 1)
    [run] = runs(sqlite_url, "d", 1)
    [first] = schedule(sqlite_url, run)
    with session_scope(sqlite_url) as session:
        fence = claim(session, first)
        retry_at = {"next_retry_at": utcnow() - dt.timedelta(seconds=1)}
        transition_tis(session, [first], [TI.RUNNING], TI.UP_FOR_RETRY, retry_at, fence)
    [again] = schedule(sqlite_url, run)
    assert active(sqlite_url, pool="p") == 1
    assert schedule(sqlite_url, run) == []
    assert again in (first, *range(first + 1, first + 4))
