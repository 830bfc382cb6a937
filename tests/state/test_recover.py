"""The scopes of a clear and a mark (``state.engine.recover``), on SQLite and PostgreSQL.

One DAG ``a >> b >> c``, ``a >> d``, a group ``g`` (``g.x >> g.y``, ``g.inner.z``) after ``d``,
and a mapped-looking task ``m`` with three map indexes; three runs a day apart. Each test sets
the states it needs, asks for a plan, and checks exactly which task instances it names; two
apply it and check the store moved as planned, and only that.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
from psycopg import sql
from sqlalchemy import delete, select, update

from state.core import NotFound
from state.core.db import get_engine, session_scope
from state.core.enums import DagRunState
from state.core.models import DagRun, TaskInstance
from state.engine.recover import (
    BadScope,
    Runs,
    Scope,
    UnknownTask,
    apply_plan,
    plan_clear,
    plan_mark,
    plan_run_mark,
)
from state.engine.runs import create_run
from tests.conftest import PG_ADMIN_URL, PG_SERVER_URL
from tests.state.harness import TI, Home, tradewind_home

DAGS = """
from tradewind import DAG, task, task_group
from tradewind.standard.external_task import ExternalTaskMarker


@task
def step():
    pass


with DAG("shop"):
    a = step.override(task_id="a")()
    b = step.override(task_id="b")()
    c = step.override(task_id="c")()
    d = step.override(task_id="d")()
    m = step.override(task_id="m")()

    @task_group(group_id="g")
    def g():
        x = step.override(task_id="x")()
        y = step.override(task_id="y")()
        x >> y

        @task_group(group_id="inner")
        def inner():
            step.override(task_id="z")()

        inner()

    a >> b >> c
    a >> d >> g()
    ExternalTaskMarker(task_id="mark", external_dag_id="other", external_task_id="p")

with DAG("other"):
    step.override(task_id="p")() >> step.override(task_id="q")()
"""
DAY = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
RUNS = ["r1", "r2", "r3"]


@contextmanager
def _database(kind: str) -> Iterator[dict[str, str]]:
    """No setting for SQLite; a PostgreSQL database of its own, dropped after the module."""
    if kind == "sqlite":
        yield {}
        return
    name = f"tw_recover_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = f"{PG_SERVER_URL}/{name}"
    try:
        yield {"database_url": url}
    finally:
        get_engine(url).dispose()
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)]
)
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Home]:
    """The DAGs synced and their runs made once per module (and per database)."""
    folder = tmp_path_factory.mktemp("recover")
    with (
        _database(request.param) as env,
        pytest.MonkeyPatch.context() as monkeypatch,
        tradewind_home(folder, monkeypatch, **env) as made,
    ):
        made.write_dag(DAGS)
        made.sync()
        with session_scope(made.url) as session:
            for day, run_id in enumerate(RUNS):
                when = DAY + dt.timedelta(days=day)
                create_run(session, "shop", run_id=run_id, data_interval=(when, when))
                create_run(session, "other", run_id=run_id, data_interval=(when, when))
                for index in range(3):  # three map indexes of m instead of -1
                    session.add(
                        TaskInstance(dag_id="shop", run_id=run_id, task_id="m", map_index=index)
                    )
            session.flush()
            m_alone = (TaskInstance.task_id == "m", TaskInstance.map_index == -1)
            session.execute(delete(TaskInstance).where(*m_alone))
        yield made


@pytest.fixture
def home(store: Home) -> Home:
    """Every task instance succeeded, every run succeeded: each test starts from there."""
    with session_scope(store.url) as session:
        session.execute(update(TaskInstance).values(state=TI.SUCCESS))
        session.execute(update(DagRun).values(state=DagRunState.SUCCESS))
    return store


def set_state(home: Home, state: TI, run_id: str, *task_ids: str) -> None:
    with session_scope(home.url) as session:
        session.execute(
            update(TaskInstance)
            .where(TaskInstance.run_id == run_id, TaskInstance.task_id.in_(task_ids))
            .values(state=state)
        )


def keys(tis: list[TaskInstance]) -> set[tuple[str, str, str | int]]:
    return {
        (ti.run_id, ti.task_id, ti.map_index) if ti.map_index >= 0 else (ti.run_id, ti.task_id, "")
        for ti in tis
    }


def cleared(
    home: Home, targets: list[str | tuple[str, int]] | None, run: str | None = "r2", **scope: bool
) -> set[tuple[str, str, str | int]]:
    with session_scope(home.url) as session:
        return keys(plan_clear(session, "shop", Runs(run), targets, Scope(**scope)).tis)


def test_a_task_alone_then_with_its_downstream_then_its_upstream(home: Home) -> None:
    assert cleared(home, ["b"]) == {("r2", "b", "")}
    assert cleared(home, ["b"], downstream=True) == {("r2", "b", ""), ("r2", "c", "")}
    assert cleared(home, ["b"], upstream=True) == {("r2", "a", ""), ("r2", "b", "")}
    both = cleared(home, ["d"], upstream=True, downstream=True)
    assert {t for _, t, _ in both} == {"a", "d", "g.x", "g.y", "g.inner.z"}


def test_past_and_future_reach_the_runs_before_and_after(home: Home) -> None:
    assert cleared(home, ["c"], past=True) == {("r1", "c", ""), ("r2", "c", "")}
    assert cleared(home, ["c"], future=True) == {("r2", "c", ""), ("r3", "c", "")}
    assert {r for r, _, _ in cleared(home, ["c"], past=True, future=True)} == set(RUNS)


def test_only_failed_and_only_running(home: Home) -> None:
    set_state(home, TI.FAILED, "r2", "b")
    set_state(home, TI.UPSTREAM_FAILED, "r2", "c")
    set_state(home, TI.RUNNING, "r2", "d")
    set_state(home, TI.FAILED, "r1", "c")
    assert cleared(home, None, only_failed=True) == {("r2", "b", ""), ("r2", "c", "")}
    assert cleared(home, None, only_running=True) == {("r2", "d", "")}
    assert cleared(home, ["c"], past=True, only_failed=True) == {("r1", "c", ""), ("r2", "c", "")}


def test_a_map_index_pair_names_that_index_only(home: Home) -> None:
    assert cleared(home, [("m", 1)]) == {("r2", "m", 1)}
    assert cleared(home, ["m"]) == {("r2", "m", 0), ("r2", "m", 1), ("r2", "m", 2)}


def test_a_window_of_logical_dates_without_a_run(home: Home) -> None:
    with session_scope(home.url) as session:
        window = Runs(None, DAY + dt.timedelta(days=1), None)
        plan = plan_clear(session, "shop", window, ["a"], Scope())
    assert keys(plan.tis) == {("r2", "a", ""), ("r3", "a", "")}


def test_a_clear_follows_external_task_markers(home: Home) -> None:
    with session_scope(home.url) as session:
        plan = plan_clear(session, "shop", Runs("r2"), ["mark"], Scope())
        found = {(ti.dag_id, ti.run_id, ti.task_id) for ti in plan.tis}
    assert found == {("shop", "r2", "mark"), ("other", "r2", "p"), ("other", "r2", "q")}


def test_bad_selections_are_refused_with_what_was_wrong(home: Home) -> None:
    with session_scope(home.url) as session:
        with pytest.raises(UnknownTask, match="no task 'nope'"):
            plan_clear(session, "shop", Runs("r2"), ["nope"], Scope())
        with pytest.raises(NotFound, match="no run 'r9'"):
            plan_clear(session, "shop", Runs("r9"), ["a"], Scope())
        with pytest.raises(BadScope, match="not running"):
            plan_mark(session, "shop", "r2", ["a"], Scope(), TI.RUNNING)


def test_marking_names_only_what_changes_then_changes_it(home: Home) -> None:
    set_state(home, TI.FAILED, "r2", "b", "c")
    with session_scope(home.url) as session:
        plan = plan_mark(session, "shop", "r2", ["b"], Scope(downstream=True), TI.SUCCESS)
        assert keys(plan.tis) == {("r2", "b", ""), ("r2", "c", "")}
        plan = plan_mark(session, "shop", "r2", ["a"], Scope(downstream=True), TI.FAILED)
        # b and c are failed already; m and the marker are not downstream of a
        assert {ti.task_id for ti in plan.tis} == {"a", "d", "g.x", "g.y", "g.inner.z"}
        moved = apply_plan(session, plan, "someone")
        assert {ti.state for ti in moved} == {TI.FAILED}
    with session_scope(home.url) as session:
        run = session.scalars(
            select(DagRun).where(DagRun.dag_id == "shop", DagRun.run_id == "r2")
        ).one()
        assert run.state == DagRunState.QUEUED  # the scheduler settles it again
        r1 = session.scalars(select(TaskInstance.state).where(TaskInstance.run_id == "r1")).all()
        assert set(r1) == {TI.SUCCESS}


def test_applying_a_clear_resets_exactly_the_plan(home: Home) -> None:
    set_state(home, TI.FAILED, "r2", "b")
    with session_scope(home.url) as session:
        plan = plan_clear(session, "shop", Runs("r2"), ["b"], Scope(downstream=True))
        done = apply_plan(session, plan, None)
        assert keys(done) == {("r2", "b", ""), ("r2", "c", "")}
    with session_scope(home.url) as session:
        rows = session.execute(
            select(TaskInstance.task_id, TaskInstance.state).where(
                TaskInstance.dag_id == "shop", TaskInstance.run_id == "r2"
            )
        ).all()
    assert {t for t, s in rows if s == TI.NONE} == {"b", "c"}


def test_a_run_mark_lists_the_task_instances_it_moves(home: Home) -> None:
    set_state(home, TI.RUNNING, "r3", "a")
    set_state(home, TI.NONE, "r3", "b")
    with session_scope(home.url) as session:
        runs = session.scalars(select(DagRun).where(DagRun.dag_id == "shop")).all()
        plan = plan_run_mark(session, runs, DagRunState.FAILED)
        assert {(c.ti.task_id, c.to_state) for c in plan.changes} == {
            ("a", TI.FAILED),
            ("b", TI.SKIPPED),
        }
        assert len(plan.runs_marked) == 3
        apply_plan(session, plan, None)
    with session_scope(home.url) as session:
        states = session.scalars(select(DagRun.state).where(DagRun.dag_id == "shop")).all()
    assert set(states) == {DagRunState.FAILED}
