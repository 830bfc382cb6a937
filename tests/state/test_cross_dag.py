"""The store's side of the cross-DAG operators: triggering a run as ``dags trigger`` does,
states by logical date, and clears that follow ``ExternalTaskMarker``s into other DAGs."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import select, update

from state.core.db import session_scope
from state.core.models import DagRun, TaskInstance
from state.engine.cross_dag import (
    DagTasks,
    Purgers,
    dag_tasks_and_groups,
    run_state,
    run_states_at,
    task_states_at,
    trigger_run,
)
from state.engine.marker_clear import MarkerDepthExceeded
from state.engine.runs import UnknownDag, clear_task_instances, create_run
from tests.state.harness import Home
from tradewind.params import ParamValidationError

WHEN = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)

DAGS = """
from tradewind import DAG, Param, task, task_group
from tradewind.standard.external_task import ExternalTaskMarker


@task
def a():
    pass


@task
def b():
    pass


@task
def c():
    pass


with DAG("target", params={"x": Param(0, type="integer")}):
    @task_group(group_id="g")
    def g():
        a() >> b()
    g() >> c()

with DAG("parent"):
    a() >> ExternalTaskMarker(
        task_id="mark", external_dag_id="child", external_task_id="b",
        logical_date="{{ logical_date.isoformat() }}",
    )

with DAG("child"):
    a() >> b() >> ExternalTaskMarker(
        task_id="mark", external_dag_id="grandchild", external_task_id="a", recursion_depth=1,
    )

with DAG("grandchild"):
    a() >> b()

with DAG("shallow"):
    ExternalTaskMarker(
        task_id="mark", external_dag_id="child", external_task_id="b", recursion_depth=1
    )

with DAG("loop_a"):
    ExternalTaskMarker(task_id="mark", external_dag_id="loop_b", external_task_id="mark")

with DAG("loop_b"):
    ExternalTaskMarker(task_id="mark", external_dag_id="loop_a", external_task_id="mark")
"""


@pytest.fixture
def synced(home: Home) -> Home:
    home.write_dag(DAGS)
    assert not home.sync().import_errors
    return home


def run_at(home: Home, dag_id: str, run_id: str, when: dt.datetime = WHEN) -> DagRun:
    with session_scope(home.url) as session:
        run = create_run(session, dag_id, run_id=run_id, data_interval=(when, when))
        session.flush()
        return run


def set_all(home: Home, dag_id: str, state: str) -> None:
    with session_scope(home.url) as session:
        session.execute(
            update(TaskInstance).where(TaskInstance.dag_id == dag_id).values(state=state)
        )


def states_of(home: Home, dag_id: str) -> dict[str, tuple[str, int]]:
    with session_scope(home.url) as session:
        rows = session.scalars(select(TaskInstance).where(TaskInstance.dag_id == dag_id))
        return {ti.task_id: (str(ti.state), ti.generation) for ti in rows}


def test_a_triggered_run_is_created_at_its_logical_date_with_its_conf(synced: Home) -> None:
    with session_scope(synced.url) as session:
        assert trigger_run(session, "target", "t1", {"x": 3}, WHEN) == "created"
    with session_scope(synced.url) as session:
        run = session.scalars(select(DagRun).where(DagRun.run_id == "t1")).one()
        assert (run.logical_date, run.conf, str(run.state)) == (WHEN, {"x": 3}, "queued")
        assert run_state(session, "target", "t1") == "queued"
        assert run_state(session, "target", "t2") is None


def test_a_trigger_checks_the_conf_and_the_dag_as_dags_trigger_does(synced: Home) -> None:
    with session_scope(synced.url) as session:
        with pytest.raises(ParamValidationError, match="x"):
            trigger_run(session, "target", "t1", {"x": "three"}, WHEN)
        with pytest.raises(UnknownDag, match="no DAG named 'nope'"):
            trigger_run(session, "nope", "t1", {}, WHEN)


def test_an_existing_run_is_left_or_cleared_when_reset(synced: Home) -> None:
    run_at(synced, "target", "t1")
    set_all(synced, "target", "success")
    with session_scope(synced.url) as session:
        assert trigger_run(session, "target", "t1", {}, None) == "exists"
    assert set(states_of(synced, "target").values()) == {("success", 0)}
    with session_scope(synced.url) as session:
        assert trigger_run(session, "target", "t1", {}, None, Purgers()) == "cleared"
    assert set(states_of(synced, "target").values()) == {("none", 1)}


def test_states_are_found_by_logical_date(synced: Home) -> None:
    run_at(synced, "target", "t1")
    run_at(synced, "target", "other", WHEN + dt.timedelta(days=1))
    with session_scope(synced.url) as session:
        assert run_states_at(session, "target", [WHEN]) == ["queued"]
        assert run_states_at(session, "target", [WHEN - dt.timedelta(days=1)]) == []
        found = task_states_at(session, "target", [WHEN], ["c"], None)
        assert found == [("t1", "c", -1, "none")]
        grouped = task_states_at(session, "target", [WHEN], None, "g")
        assert sorted(row[1] for row in grouped) == ["g.a", "g.b"]
        assert task_states_at(session, "target", [WHEN], None, "nothing") == []


def test_a_dag_s_tasks_and_groups_are_known_or_none(synced: Home) -> None:
    with session_scope(synced.url) as session:
        known = dag_tasks_and_groups(session, "target")
        assert known == DagTasks(["g.a", "g.b", "c"], ["g"], is_paused=False)
        assert dag_tasks_and_groups(session, "nope") is None


def test_clearing_a_marker_clears_the_marked_task_and_its_downstream_recursively(
    synced: Home,
) -> None:
    parent = run_at(synced, "parent", "p1")
    run_at(synced, "child", "c1")
    run_at(synced, "child", "c_other_day", WHEN + dt.timedelta(days=1))
    run_at(synced, "grandchild", "g1")
    for dag_id in ("parent", "child", "grandchild"):
        set_all(synced, dag_id, "success")

    with session_scope(synced.url) as session:
        run = session.get_one(DagRun, parent.id)
        cleared = clear_task_instances(session, run, ["mark"])

    assert cleared == 1 + 2 + 2  # parent's marker; child's b and mark; grandchild's a and b
    assert states_of(synced, "parent") == {"a": ("success", 0), "mark": ("none", 1)}
    with session_scope(synced.url) as session:
        child = session.scalars(
            select(TaskInstance).where(TaskInstance.run_id == "c1", TaskInstance.state == "none")
        )
        assert sorted(ti.task_id for ti in child) == ["b", "mark"]
        other_day = session.scalars(
            select(TaskInstance).where(TaskInstance.run_id == "c_other_day")
        )
        assert {str(ti.state) for ti in other_day} == {"success"}
    assert set(states_of(synced, "grandchild").values()) == {("none", 1)}


def test_a_clear_without_markers_stays_in_its_run(synced: Home) -> None:
    parent = run_at(synced, "parent", "p1")
    run_at(synced, "child", "c1")
    set_all(synced, "parent", "success")
    set_all(synced, "child", "success")
    with session_scope(synced.url) as session:
        assert clear_task_instances(session, session.get_one(DagRun, parent.id), ["a"]) == 1
    assert set(states_of(synced, "child").values()) == {("success", 0)}


def test_markers_that_mark_each_other_clear_each_task_once(synced: Home) -> None:
    loop = run_at(synced, "loop_a", "la")
    run_at(synced, "loop_b", "lb")
    set_all(synced, "loop_a", "success")
    set_all(synced, "loop_b", "success")
    with session_scope(synced.url) as session:
        assert clear_task_instances(session, session.get_one(DagRun, loop.id), ["mark"]) == 2
    assert states_of(synced, "loop_a") == states_of(synced, "loop_b") == {"mark": ("none", 1)}


def test_a_clear_deeper_than_the_first_marker_s_depth_is_refused_whole(synced: Home) -> None:
    shallow = run_at(synced, "shallow", "s1")
    run_at(synced, "child", "c1")
    set_all(synced, "shallow", "success")
    set_all(synced, "child", "success")
    with session_scope(synced.url) as session:
        with pytest.raises(MarkerDepthExceeded, match="deeper than recursion_depth 1") as refused:
            clear_task_instances(session, session.get_one(DagRun, shallow.id), ["mark"])
        session.rollback()
    assert str(refused.value).startswith("clearing child.mark goes deeper")
    assert "\n" not in str(refused.value)
    assert states_of(synced, "shallow") == {"mark": ("success", 0)}
