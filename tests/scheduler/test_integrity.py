"""verify_integrity keeps a run true to its DAG, also when two schedulers do it at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import func, select, text, update
from sqlalchemy.orm import Session

from state.core.db import session_factory
from state.core.enums import DagRunState, TaskInstanceState
from state.core.models import DagModel, DagRun, TaskInstance
from state.core.structure import structure_of
from state.engine.runs import verify_integrity
from state.engine.scheduling import schedule_run_by_pk, try_schedule_run
from tests.scheduler.conftest import create_schema, new_run, store_dag, tis_of, wide

TI = TaskInstanceState
PG_DATABASE_PREFIX = "tw_integrity_"


def test_new_tasks_are_added_gone_ones_removed_and_returning_ones_restored(
    session: Session,
) -> None:
    store_dag(session, "d", {"a": wide(1)["t0"], "b": wide(1)["t0"]})
    run = new_run(session, "d")
    session.execute(
        update(TaskInstance).where(TaskInstance.task_id == "a").values(state=TI.SUCCESS)
    )
    session.commit()

    store_dag(session, "d", {"a": wide(1)["t0"], "c": wide(1)["t0"]})
    session.commit()
    queued = schedule_run_by_pk(session, run.id)  # the version changed: the pass verifies first
    session.commit()
    states = {task_id: ti.state for task_id, ti in tis_of(session, run).items()}
    assert states == {"a": TI.SUCCESS, "b": TI.REMOVED, "c": TI.QUEUED}
    assert [q.task_id for q in queued] == ["c"]

    store_dag(session, "d", {"a": wide(1)["t0"], "b": wide(1)["t0"], "c": wide(1)["t0"]})
    session.commit()
    assert [q.task_id for q in schedule_run_by_pk(session, run.id)] == ["b"]
    session.commit()
    assert tis_of(session, run)["b"].state == TI.QUEUED


@pytest.fixture
def pg(pg_url: str) -> Iterator[str]:
    yield create_schema(pg_url)


def stored_versions(url: str, *versions: list[str]) -> list[DagModel]:
    """The DAG ``d`` as each version would be parsed (only the first is committed)."""
    models = []
    with session_factory(url).begin() as session:
        for tasks in versions:
            model = store_dag(session, "d", {t: wide(1)["t0"] for t in tasks})
            models.append(DagModel(**{c: getattr(model, c) for c in ("dag_id", "structure")}))
            models[-1].version_hash = model.version_hash
        store_dag(session, "d", {t: wide(1)["t0"] for t in versions[0]})
        new_run(session, "d")
    return models


def blocked_backends(url: str) -> int:
    with session_factory(url)() as session:
        query = text(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return int(session.scalar(query) or 0)


@pytest.mark.integration
def test_two_schedulers_verifying_one_run_at_once_keep_one_row_per_task(pg: str) -> None:
    first, second = stored_versions(pg, ["a"], ["a", "b"], ["a", "b", "c"])[1:]
    factory = session_factory(pg)
    errors: list[BaseException] = []

    def second_scheduler() -> None:
        try:
            with factory.begin() as session:
                run = session.scalars(select(DagRun)).one()
                verify_integrity(
                    session, run, structure_of(second), second.version_hash
                )  # waits on b, inserted by the first
                # The transaction survived the conflict: it still reads and writes.
                session.execute(update(DagRun).values(conf={"verified": True}))
        except BaseException as error:  # handed to the test thread, which fails on it
            errors.append(error)

    with factory.begin() as session:
        run = session.scalars(select(DagRun)).one()
        verify_integrity(session, run, structure_of(first), first.version_hash)
        session.flush()
        thread = threading.Thread(target=second_scheduler)
        thread.start()
        deadline = time.monotonic() + 10
        while blocked_backends(pg) == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert blocked_backends(pg) == 1  # the second scheduler waits on the unique key
    thread.join(10)

    assert errors == []
    with factory() as session:
        counts = session.execute(
            select(TaskInstance.task_id, func.count()).group_by(TaskInstance.task_id)
        ).all()
        assert sorted(counts) == [("a", 1), ("b", 1), ("c", 1)]
        assert session.scalars(select(DagRun.conf)).one() == {"verified": True}


@pytest.mark.integration
def test_a_run_locked_by_one_scheduler_is_skipped_by_another(pg: str) -> None:
    stored_versions(pg, ["a"])
    factory = session_factory(pg)
    with factory.begin() as holder, factory.begin() as other:
        run_pk = holder.scalars(select(DagRun.id)).one()
        holder.get_one(DagRun, run_pk, with_for_update=True)  # held, as by another scheduler
        started = time.monotonic()
        assert try_schedule_run(other, run_pk) is None
        assert schedule_run_by_pk(other, run_pk) == []
        assert time.monotonic() - started < 5.0  # skipped, not waited for (waiting would hang)
    with factory() as session:
        assert session.scalars(select(DagRun.state)).one() == DagRunState.QUEUED
