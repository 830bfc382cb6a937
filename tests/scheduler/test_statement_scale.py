"""One scheduling pass runs as many SQL statements for a 1,000-task run as for a 10-task one.

Dependencies are evaluated in memory from one read of the run's task instances, and every move
is one UPDATE for all the task instances it applies to (DESIGN.md §4).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import event, update

from state.core.db import get_engine, session_factory, session_scope
from state.core.enums import TaskInstanceState
from state.core.models import DEFAULT_POOL, DagRun, TaskInstance, utcnow
from state.engine.pools import set_pool
from state.engine.scheduling import schedule_run_by_pk
from tests.scheduler.conftest import (
    StatementLog,
    create_schema,
    new_run,
    store_dag,
    task_spec,
    wide,
)

TI = TaskInstanceState
PG_DATABASE_PREFIX = "tw_scale_"
LIMITS = {"max_active_tasks": 100_000}


def fresh_wide(url: str, n: int) -> int:
    """A run not yet started of ``n`` independent tasks: the pass schedules and queues them."""
    with session_factory(url).begin() as session:
        store_dag(session, "d", wide(n), **LIMITS)
        return new_run(session, "d").id


def half_way(url: str, n: int) -> int:
    """Roots in every state a pass acts on, each with a child waiting on it."""
    half = n // 2
    tasks = {f"r{i}": task_spec() for i in range(half)}
    tasks.update({f"c{i}": task_spec([f"r{i}"]) for i in range(half)})
    root_states = [TI.SUCCESS, TI.FAILED, TI.UP_FOR_RETRY, TI.RUNNING]
    with session_factory(url).begin() as session:
        store_dag(session, "d", tasks, **LIMITS)
        run = new_run(session, "d")
        session.execute(update(DagRun).values(state="running"))
        for k, state in enumerate(root_states):
            ids = [f"r{i}" for i in range(half) if i % len(root_states) == k]
            session.execute(
                update(TaskInstance)
                .where(TaskInstance.task_id.in_(ids))
                .values(state=state, try_number=1, next_retry_at=utcnow() - dt.timedelta(1))
            )
        return run.id


Scenario = Callable[[str, int], int]


def statements_of_one_pass(url: str, scenario: Scenario, n: int) -> tuple[int, int]:
    """(statements, task instances queued) for one pass over the scenario's run."""
    run_pk = scenario(url, n)
    log = StatementLog()
    engine = get_engine(url)
    event.listen(engine, "before_cursor_execute", log)
    try:
        with session_scope(url) as session:
            queued = schedule_run_by_pk(session, run_pk)
    finally:
        event.remove(engine, "before_cursor_execute", log)
    return len(log.statements), len(queued)


def roomy_store(url: str) -> str:
    """A fresh store whose default pool never limits what a pass queues."""
    create_schema(url)
    with session_scope(url) as session:
        set_pool(session, DEFAULT_POOL, 100_000)
    return url


def fresh_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return roomy_store(f"sqlite:///{tmp_path_factory.mktemp('db')}/tradewind.db")


@pytest.mark.parametrize("scenario", [fresh_wide, half_way])
def test_statements_per_pass_do_not_grow_with_the_run(
    scenario: Scenario, tmp_path_factory: pytest.TempPathFactory
) -> None:
    small, small_queued = statements_of_one_pass(fresh_url(tmp_path_factory), scenario, 10)
    large, large_queued = statements_of_one_pass(fresh_url(tmp_path_factory), scenario, 1000)
    assert 0 < small_queued < large_queued
    assert large == small, f"{small} statements for 10 tasks, {large} for 1,000"


@pytest.fixture
def pg_urls(pg_url: str) -> Iterator[str]:
    yield roomy_store(pg_url)


@pytest.mark.integration
@pytest.mark.parametrize("n", [10, 1000])
def test_statements_per_pass_on_postgresql(pg_urls: str, n: int) -> None:
    statements, queued = statements_of_one_pass(pg_urls, half_way, n)
    assert queued > 0
    assert statements <= 14  # the same small constant for both sizes
