"""Who takes a free slot, and how many it takes: ``priority_weight``, ``pool_slots`` and the
per-task caps, on SQLite and on PostgreSQL.

A pass (the scheduler's) and an end (a supervisor's, with its hand-over in the dialect's SQL)
are driven through the store's own functions; tries are claimed and ended as a supervisor does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select, update

from broker_config import message_of
from state.core.db import session_scope, statement_scope
from state.core.enums import TaskInstanceState
from state.core.models import TaskInstance
from state.engine.outcomes import Succeeded
from state.engine.pools import pool_usage, set_pool
from state.engine.scheduling import Enqueue, dag_version
from state.engine.try_life import HeldTry, claim_try
from tests.state.harness import Home, end_claimed, tradewind_home

TI = TaskInstanceState
PG_DATABASE_PREFIX = "tw_slots_"

SLOT_DAGS = """
from tradewind import DAG, WeightRule, task

@task
def step(x=None):
    pass

with DAG("weighed"):
    for name, weight in [("light", 1), ("heavy", 9), ("middle", 5)]:
        step.override(task_id=name, pool="solo", priority_weight=weight)()

with DAG("weighed_chain", max_active_runs=4):
    first = step.override(task_id="first", pool="solo", weight_rule="absolute")()
    first >> step.override(task_id="then", pool="solo", priority_weight=7,
                           weight_rule=WeightRule.ABSOLUTE)()

with DAG("wide"):
    step.override(task_id="big", pool="trio", pool_slots=2, priority_weight=9)()
    step.override(task_id="big_too", pool="trio", pool_slots=2, priority_weight=8)()
    step.override(task_id="small", pool="trio", priority_weight=1)()
    step.override(task_id="huge", pool="trio", pool_slots=4, priority_weight=10)()

with DAG("capped_in_run"):
    step.override(task_id="each", max_active_tis_per_dagrun=2).expand(x=[1, 2, 3, 4, 5])

with DAG("capped_in_dag", max_active_runs=4):
    step.override(task_id="once", max_active_tis_per_dag=1)()
    step.override(task_id="free")()
"""


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def store(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Home]:
    """A migrated store of the dialect named by the parameter, with the DAGs above."""
    env = {}
    if request.param == "postgresql":
        env["database_url"] = request.getfixturevalue("pg_url")
    with tradewind_home(tmp_path, monkeypatch, **env) as home:
        with session_scope(home.url) as session:
            set_pool(session, "solo", 1)
            set_pool(session, "trio", 3)
        home.write_dag(SLOT_DAGS)
        assert home.sync().import_errors == {}
        yield home


def claim(home: Home, queued: Enqueue) -> HeldTry:
    """Claim ``queued`` as its supervisor does, its DAG's structure read (so its end may plan)."""
    with statement_scope(home.url) as session:
        held = claim_try(session, message_of(queued))
        assert isinstance(held, HeldTry) and held.version_hash is not None
        dag_version(session, queued.dag_id, held.version_hash)
    return held


def succeed(home: Home, queued: Enqueue) -> list[str]:
    """Claim ``queued`` and end it in success; the task ids (with map index) its end queued."""
    recorded, ready = end_claimed(home.url, claim(home, queued), Succeeded())
    assert recorded
    return [_name(e) for e in ready]


def _name(queued: Enqueue) -> str:
    return queued.task_id if queued.map_index < 0 else f"{queued.task_id}[{queued.map_index}]"


def names(queued: list[Enqueue]) -> list[str]:
    return sorted(_name(e) for e in queued)


def active(home: Home, run_pk: int) -> list[str]:
    return sorted(t for t, s in home.states(run_pk).items() if s in (TI.QUEUED, TI.RUNNING))


def test_task_instances_carry_their_weight_and_slots(store: Home) -> None:
    run_pk = store.trigger("wide")
    tis = store.tis(run_pk)
    assert {t: (ti.priority_weight, ti.pool_slots) for t, ti in tis.items()} == {
        "big": (9, 2),
        "big_too": (8, 2),
        "small": (1, 1),
        "huge": (10, 4),
    }


def test_a_one_slot_pool_runs_the_heaviest_waiting_try_first(store: Home) -> None:
    run_pk = store.trigger("weighed")
    [first] = store.schedule(run_pk)
    assert first.task_id == "heavy"

    # The end hands its slot to the next heaviest, in the end's own statement(s).
    ti = store.ti(run_pk, "heavy")
    assert succeed(store, Enqueue.of(ti)) == ["middle"]
    assert succeed(store, Enqueue.of(store.ti(run_pk, "middle"))) == ["light"]
    assert active(store, run_pk) == ["light"]


def test_another_runs_heavier_try_takes_the_slot_before_a_successor(store: Home) -> None:
    # "first" weighs 1 and "then" 7 (absolute): a run's "then" outranks another run's "first".
    one, two = store.trigger("weighed_chain"), store.trigger("weighed_chain")
    [first_of_one] = store.schedule(one)
    assert store.schedule(two) == []  # the one slot is taken

    assert succeed(store, first_of_one) == ["then"]  # the heaviest waiting: its own successor
    assert store.states(two)["first"] == TI.SCHEDULED

    # A leaf's end hands its slot over within its run only: the scheduler's pass does the rest.
    assert succeed(store, Enqueue.of(store.ti(one, "then"))) == []
    assert [e.task_id for e in store.schedule(two)] == ["first"]


def test_a_lighter_successor_leaves_the_slot_to_another_runs_heavier_try(store: Home) -> None:
    one, two = store.trigger("weighed_chain"), store.trigger("weighed_chain")
    [first_of_one] = store.schedule(one)
    assert store.schedule(two) == []
    held = claim(store, first_of_one)
    # Run two's "first" weighs more than run one's "then" (7): raised by hand.
    with session_scope(store.url) as session:
        ti = store.ti(two, "first")
        session.execute(
            update(TaskInstance).where(TaskInstance.id == ti.id).values(priority_weight=8)
        )

    recorded, ready = end_claimed(store.url, held, Succeeded())

    assert recorded and ready == []  # the slot is given back: run two goes first
    assert [e.task_id for e in store.schedule(two)] == ["first"]
    assert store.schedule(one) == []


def test_a_try_takes_its_pool_slots_and_lighter_ones_fill_what_is_left(store: Home) -> None:
    run_pk = store.trigger("wide")
    # huge (4 slots of 3) can never run and holds nothing back; big takes 2, small the third.
    assert names(store.schedule(run_pk)) == ["big", "small"]
    with session_scope(store.url) as session:
        assert ("trio", 3, 3) in pool_usage(session)

    store.end_try(store.ti(run_pk, "small").id, TI.SUCCESS)
    assert store.schedule(run_pk) == []  # one slot free: big_too needs 2
    store.end_try(store.ti(run_pk, "big").id, TI.SUCCESS)
    assert names(store.schedule(run_pk)) == ["big_too"]
    assert store.states(run_pk)["huge"] == TI.SCHEDULED


def test_an_end_in_a_dag_of_wide_tries_counts_the_slots_in_a_pass(store: Home) -> None:
    run_pk = store.trigger("wide")
    queued = {e.task_id: e for e in store.schedule(run_pk)}
    # small's end frees one slot: big_too (2) does not fit; no hand-over may queue it anyway.
    assert succeed(store, queued["small"]) == []
    assert succeed(store, queued["big"]) == ["big_too"]


def test_a_task_capped_per_run_runs_that_many_of_its_instances_at_once(store: Home) -> None:
    run_pk = store.trigger("capped_in_run")
    queued = store.schedule(run_pk)  # the pass expands, then queues two of the five
    queued += store.schedule(run_pk)
    assert len(queued) == 2
    assert len(succeed(store, queued[0])) == 1
    assert len(succeed(store, queued[1])) == 1
    run = store.run(run_pk)
    with session_scope(store.url) as session:
        states = session.scalars(
            select(TaskInstance.state).where(TaskInstance.run_id == run.run_id)
        ).all()
    assert sorted(states) == ["queued", "queued", "scheduled", "success", "success"]


def test_a_task_capped_per_dag_runs_once_across_runs(store: Home) -> None:
    one, two = store.trigger("capped_in_dag"), store.trigger("capped_in_dag")
    assert names(store.schedule(one)) == ["free", "once"]
    assert names(store.schedule(two)) == ["free"]  # "once" of run one holds its cap

    assert succeed(store, Enqueue.of(store.ti(one, "once"))) == []  # its pass is of run one
    assert names(store.schedule(two)) == ["once"]
    assert active(store, two) == ["free", "once"]
