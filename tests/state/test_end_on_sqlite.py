"""A supervisor's end on SQLite: a lone successor takes the ended try's slot.

The end is recorded by ``state.engine.try_life.record``, as a supervisor does. For a successful task
with one plain successor in its pool, no pool is counted and only the successor's and its upstreams'
rows are read (none at all when the ended task is its only upstream); anything else is the full
pass, with the same outcome as the scheduler's.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from broker_config import message_of
from state.core.db import session_scope, statement_scope
from state.core.enums import TaskInstanceState
from state.engine.outcomes import Succeeded
from state.engine.pools import set_pool
from state.engine.scheduling import Enqueue
from state.engine.try_life import HeldTry, claim_try
from tests.state.harness import HAND_OVER_DAGS, Home, StatementCounter, end_claimed

TI = TaskInstanceState


@pytest.fixture
def dags(home: Home) -> Home:
    with session_scope(home.url) as session:
        set_pool(session, "solo", 1)
    home.write_dag(HAND_OVER_DAGS)
    assert home.sync().import_errors == {}
    return home


@pytest.fixture
def statements(dags: Home) -> Iterator[StatementCounter]:
    counter = StatementCounter(dags.url)
    yield counter
    counter.close()


def end_and_pass(
    home: Home,
    run_pk: int,
    task_id: str,
    statements: StatementCounter | None = None,
) -> list[str]:
    """HeldTry ``task_id``'s queued try and end it in success, as its supervisor would.

    ``statements`` count those of the end alone.
    """
    ti = home.ti(run_pk, task_id)
    with statement_scope(home.url) as session:
        claim = claim_try(session, message_of(Enqueue.of(ti)))
    assert isinstance(claim, HeldTry)
    if statements is not None:
        statements.statements.clear()
    recorded, ready = end_claimed(home.url, claim, Succeeded())
    assert recorded
    return [enqueue.task_id for enqueue in ready]


def active(home: Home, run_pks: list[int]) -> int:
    states = [state for pk in run_pks for state in home.states(pk).values()]
    return sum(state in (TI.QUEUED, TI.RUNNING) for state in states)


def test_a_lone_successor_is_queued_from_its_own_rows_without_counting_pools(
    dags: Home, statements: StatementCounter
) -> None:
    run_pk = dags.trigger("chain")
    assert [e.task_id for e in dags.schedule(run_pk)] == ["a"]

    assert end_and_pass(dags, run_pk, "a", statements=statements) == ["b"]

    seen = list(statements.statements)
    assert dags.states(run_pk) == {"a": TI.SUCCESS, "b": TI.QUEUED, "c": TI.NONE}
    # Nothing counted: a pool's size is read only to see whether another run's try outranks it.
    assert not [s for s in seen if "count(" in s.lower() or "sum(" in s.lower()]
    # The end, the run's lock, and none -> queued of the successor chosen by name: no read.
    assert len(seen) == 3
    assert dags.ti(run_pk, "b").try_number == 1


def test_a_successor_one_success_does_not_make_ready_is_decided_from_the_rows(
    dags: Home,
) -> None:
    run_pk = dags.trigger("alerting")
    dags.schedule(run_pk)

    assert end_and_pass(dags, run_pk, "a") == []

    assert dags.states(run_pk) == {"a": TI.SUCCESS, "alert": TI.SKIPPED}


def test_several_successors_take_the_full_pass(dags: Home, statements: StatementCounter) -> None:
    run_pk = dags.trigger("fork")
    dags.schedule(run_pk)

    assert sorted(end_and_pass(dags, run_pk, "a", statements=statements)) == ["b", "c"]

    assert [s for s in statements.statements if "slot_pool" in s]  # the pools were counted


def test_a_try_waiting_for_a_slot_in_the_run_is_queued_in_order_by_the_full_pass(
    dags: Home,
) -> None:
    run_pk = dags.trigger("solo_side")
    assert [e.task_id for e in dags.schedule(run_pk)] == ["a"]  # c waits: one slot
    assert dags.states(run_pk)["c"] == TI.SCHEDULED

    queued = end_and_pass(dags, run_pk, "a")

    assert len(queued) == 1 and active(dags, [run_pk]) == 1  # never two in a 1-slot pool


def test_the_successor_keeps_the_slot_of_the_try_it_follows(dags: Home) -> None:
    first = dags.trigger("solo_chain")
    assert [e.task_id for e in dags.schedule(first)] == ["a"]

    assert end_and_pass(dags, first, "a") == ["b"]

    assert active(dags, [first]) == 1


def test_a_successor_gives_its_slot_to_another_runs_heavier_try(dags: Home) -> None:
    # a weighs 2 (itself and b), b weighs 1: the second run's a goes first, as in Airflow.
    first, second = dags.trigger("solo_chain"), dags.trigger("solo_chain")
    assert [e.task_id for e in dags.schedule(first)] == ["a"]
    assert dags.schedule(second) == []  # the pool's one slot is taken
    assert dags.states(second)["a"] == TI.SCHEDULED

    assert end_and_pass(dags, first, "a") == []

    assert active(dags, [first, second]) == 0
    assert [e.task_id for e in dags.schedule(second)] == ["a"]
    assert dags.schedule(first) == []
    assert dags.states(first)["b"] == TI.SCHEDULED
