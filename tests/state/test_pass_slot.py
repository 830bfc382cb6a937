"""A try with nothing downstream hands its slot to the first try of its run waiting for one.

Without it, a run with more task instances than its pool has slots went on at one pool's worth
per scheduler loop (128 task instances a second with the default pool, however fast the
workers). Tries are claimed and ended with the store's functions a supervisor calls
(``state.engine.try_life``), on SQLite and on a real PostgreSQL, where it is one statement.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from broker_config import message_of
from state.core.db import session_scope, statement_scope
from state.core.enums import TaskInstanceState
from state.core.models import XCom
from state.core.transitions import transition_tis
from state.engine.outcomes import Failed, Outcome, Succeeded
from state.engine.pools import set_pool
from state.engine.scheduling import Enqueue
from state.engine.try_life import HeldTry, claim_try
from tests.state.harness import Home, counting_statements, end_claimed, tradewind_home

TI = TaskInstanceState
PG_DATABASE_PREFIX = "tw_pass_slot_"

# Three independent tasks sharing the one slot of pool "solo", and one in the default pool.
FAN_DAG = """
from tradewind import DAG, task

@task(retries=1)
def leaf():
    pass

with DAG("fan"):
    for name in ("a", "b", "c"):
        leaf.override(task_id=name, pool="solo")()
    leaf.override(task_id="elsewhere")()
"""


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def fan(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Home]:
    env = {"database_url": request.getfixturevalue("pg_url")} if request.param != "sqlite" else {}
    with tradewind_home(tmp_path, monkeypatch, **env) as made:
        with session_scope(made.url) as session:
            set_pool(session, "solo", 1)
        made.write_dag(FAN_DAG)
        assert made.sync().import_errors == {}
        yield made


def claim_first(home: Home) -> tuple[int, HeldTry]:
    """Trigger ``fan`` and claim its try queued in pool "solo" (a, the first by id)."""
    run_pk = home.trigger("fan")
    queued = {enqueue.task_id: enqueue for enqueue in home.schedule(run_pk)}
    assert set(queued) == {"a", "elsewhere"}
    with statement_scope(home.url) as session:
        claim = claim_try(session, message_of(queued["a"]))
    assert isinstance(claim, HeldTry)
    return run_pk, claim


def test_the_first_try_waiting_in_the_pool_takes_the_slot(fan: Home) -> None:
    run_pk, claim = claim_first(fan)
    assert fan.states(run_pk)["b"] == fan.states(run_pk)["c"] == TI.SCHEDULED
    with counting_statements(fan.url) as counter:
        recorded, ready = end_claimed(fan.url, claim, Succeeded())

    assert recorded and [enqueue.task_id for enqueue in ready] == ["b"]
    states = fan.states(run_pk)
    assert (states["a"], states["b"], states["c"]) == (TI.SUCCESS, TI.QUEUED, TI.SCHEDULED)
    b = fan.ti(run_pk, "b")
    assert (b.try_number, b.fence_token, b.queued_at is not None) == (1, None, True)
    if fan.url.startswith("postgresql"):
        assert len(counter.statements) == 1


def test_a_failed_try_hands_its_slot_over_too(fan: Home) -> None:
    run_pk, claim = claim_first(fan)

    recorded, ready = end_claimed(fan.url, claim, Failed("boom"))

    assert recorded and [enqueue.task_id for enqueue in ready] == ["b"]
    a = fan.ti(run_pk, "a")
    assert a.state == TI.UP_FOR_RETRY and a.error == "boom"
    assert a.next_retry_at is not None  # the taker's NULL is not the end's parameter


def test_a_pool_lowered_below_what_runs_gets_the_slot_back(fan: Home) -> None:
    run_pk, claim = claim_first(fan)
    with session_scope(fan.url) as session:
        set_pool(session, "solo", 0)

    recorded, ready = end_claimed(fan.url, claim, Succeeded())

    assert recorded and ready == []
    states = fan.states(run_pk)
    assert (states["a"], states["b"], states["c"]) == (TI.SUCCESS, TI.SCHEDULED, TI.SCHEDULED)


def test_a_dag_that_changed_hands_nothing_over(fan: Home) -> None:
    run_pk, claim = claim_first(fan)
    fan.write_dag(FAN_DAG.replace('with DAG("fan")', 'with DAG("fan", max_active_tasks=1)'))
    assert fan.sync().import_errors == {}  # a new version: its limits are the scheduler's to apply

    recorded, ready = end_claimed(fan.url, claim, Succeeded())

    assert recorded and ready == []
    assert fan.states(run_pk)["b"] == TI.SCHEDULED


def test_a_try_that_lost_its_task_instance_hands_nothing_over(fan: Home) -> None:
    run_pk, claim = claim_first(fan)
    with session_scope(fan.url) as session:  # a zombie sweep got there first
        assert transition_tis(session, [claim.fence.ti_id], [TI.RUNNING], TI.FAILED) == 1

    assert end_claimed(fan.url, claim, Succeeded()) == (False, [])

    states = fan.states(run_pk)
    assert (states["a"], states["b"], states["c"]) == (TI.FAILED, TI.SCHEDULED, TI.SCHEDULED)


def test_a_paused_dag_hands_nothing_over(fan: Home) -> None:
    run_pk, claim = claim_first(fan)
    with session_scope(fan.url) as session:
        fan_model = fan.dag_model("fan")
        fan_model.is_paused = True
        session.merge(fan_model)

    recorded, ready = end_claimed(fan.url, claim, Succeeded())

    assert recorded and ready == []
    assert fan.states(run_pk)["b"] == TI.SCHEDULED


# A map over three items in the one slot of "solo", then a reduce over all of them.
MAPPED_DAG = """
from tradewind import DAG, task

@task
def items():
    return [1, 2, 3]

@task(pool="solo")
def double(x):
    return 2 * x

@task
def total(values):
    return sum(values)

with DAG("mapped"):
    total(double.expand(x=items()))
"""


@pytest.fixture
def mapped(fan: Home) -> Home:
    fan.write_dag(MAPPED_DAG, name="mapped.py")
    assert fan.sync().import_errors == {}
    return fan


def run_try(home: Home, enqueue: Enqueue, outcome: Outcome) -> list[Enqueue]:
    """HeldTry ``enqueue``'s try and end it as its supervisor does; what the end queued.

    ``items`` pushes its list first (its return value: what ``double`` is expanded over).
    """
    with statement_scope(home.url) as session:
        claim = claim_try(session, message_of(enqueue))
    assert isinstance(claim, HeldTry)
    if enqueue.task_id == "items":
        with session_scope(home.url) as session:
            ids = {"dag_id": "mapped", "run_id": enqueue.run_id, "task_id": "items"}
            session.add(XCom(**ids, map_index=-1, key="return_value", value="[1, 2, 3]"))
    recorded, ready = end_claimed(home.url, claim, outcome)
    assert recorded
    return ready


def test_a_map_index_hands_its_slot_to_the_next_and_the_last_one_queues_the_reduce(
    mapped: Home,
) -> None:
    run_pk = mapped.trigger("mapped")
    [items] = mapped.schedule(run_pk)
    [first] = run_try(mapped, items, Succeeded())  # expands double: one slot, one queued
    assert (first.task_id, first.map_index) == ("double", 0)
    assert mapped.schedule(run_pk) == []  # the scheduler's loop: the others wait for the slot

    with counting_statements(mapped.url) as counter:
        [second] = run_try(mapped, first, Succeeded())
    assert (second.task_id, second.map_index) == ("double", 1)
    if mapped.url.startswith("postgresql"):  # the claim, then the end with the hand-over
        assert len(counter.statements) == 2
    assert mapped.states(run_pk)["total"] == TI.NONE

    [third] = run_try(mapped, second, Succeeded())
    assert (third.task_id, third.map_index) == ("double", 2)
    [reduce] = run_try(mapped, third, Succeeded())  # none waits: the pass runs
    assert reduce.task_id == "total"


def test_a_failed_map_index_takes_the_full_pass(mapped: Home) -> None:
    run_pk = mapped.trigger("mapped")
    [items] = mapped.schedule(run_pk)
    [first] = run_try(mapped, items, Succeeded())

    ready = run_try(mapped, first, Failed("boom", retryable=False))

    assert mapped.states(run_pk)["total"] == TI.UPSTREAM_FAILED  # decided at once, as before
    assert [(enqueue.task_id, enqueue.map_index) for enqueue in ready] == [("double", 1)]


@pytest.mark.integration
def test_ends_at_once_never_queue_a_try_twice_nor_pass_the_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pg_url: str
) -> None:
    """Two supervisors end their tries of one run at the same moment, on PostgreSQL."""
    with tradewind_home(tmp_path, monkeypatch, database_url=pg_url) as home:
        with session_scope(home.url) as session:
            set_pool(session, "solo", 2)
        home.write_dag(FAN_DAG.replace('("a", "b", "c")', '("a", "b", "c", "d", "e")'))
        assert home.sync().import_errors == {}
        run_pk = home.trigger("fan")
        queued = [e for e in home.schedule(run_pk) if e.task_id != "elsewhere"]
        with statement_scope(home.url) as session:
            claims = [claim_try(session, message_of(enqueue)) for enqueue in queued]
        assert [claim.ti.task_id for claim in claims if isinstance(claim, HeldTry)] == ["a", "b"]
        start = threading.Barrier(2)

        def end(claim: HeldTry | str) -> list[Enqueue]:
            assert isinstance(claim, HeldTry)
            start.wait()
            recorded, ready = end_claimed(home.url, claim, Succeeded())
            assert recorded
            return ready

        with ThreadPoolExecutor(2) as pool:
            taken = [e.task_id for ready in pool.map(end, claims) for e in ready]

        states = home.states(run_pk)
        assert len(taken) == len(set(taken)) and set(taken) <= {"c", "d", "e"}
        assert sorted(t for t in "cde" if states[t] == TI.QUEUED) == sorted(taken)
        assert sum(states[t] in (TI.QUEUED, TI.RUNNING) for t in "abcde") <= 2
        assert all(home.ti(run_pk, t).try_number <= 1 for t in "cde")


# Three tasks in the one slot of "solo", joined by a fourth.
JOINED_DAG = """
from tradewind import DAG, task

@task(pool="solo")
def part():
    pass

@task
def join():
    pass

with DAG("joined"):
    joined = join()
    for name in ("p0", "p1", "p2"):
        part.override(task_id=name)() >> joined
"""


def test_a_task_joined_with_others_hands_its_slot_to_the_next_of_them(fan: Home) -> None:
    fan.write_dag(JOINED_DAG, name="joined.py")
    assert fan.sync().import_errors == {}
    run_pk = fan.trigger("joined")
    [p0] = fan.schedule(run_pk)  # one slot: p1 and p2 wait for it

    with counting_statements(fan.url) as counter:
        [p1] = run_try(fan, p0, Succeeded())
    assert p1.task_id == "p1"
    if fan.url.startswith("postgresql"):  # the claim, then the end with the hand-over
        assert len(counter.statements) == 2
    assert fan.states(run_pk)["join"] == TI.NONE

    [p2] = run_try(fan, p1, Succeeded())
    assert p2.task_id == "p2"
    [join] = run_try(fan, p2, Succeeded())  # none waits: the pass runs
    assert join.task_id == "join"
