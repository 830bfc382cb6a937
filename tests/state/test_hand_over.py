"""A chain's hop on PostgreSQL: the try's end and its lone successor's queuing in one statement.

Tries are claimed and ended with the store's functions a supervisor calls
(``state.engine.try_life``) on a real PostgreSQL; statements are counted on the engine.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from broker_config import message_of
from state.core.db import get_engine, session_scope, statement_scope
from state.core.enums import TaskInstanceState
from state.core.transitions import transition_tis
from state.engine.outcomes import Succeeded
from state.engine.pools import set_pool
from state.engine.scheduling import dag_version
from state.engine.try_life import HeldTry, claim_try
from tests.state.harness import (
    HAND_OVER_DAGS,
    Home,
    counting_statements,
    end_claimed,
    tradewind_home,
)

TI = TaskInstanceState
PG_DATABASE_PREFIX = "tw_hand_over_"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pg_url: str) -> Iterator[Home]:
    with tradewind_home(tmp_path, monkeypatch, database_url=pg_url) as made:
        with session_scope(made.url) as session:
            set_pool(session, "solo", 1)
        made.write_dag(HAND_OVER_DAGS)
        assert made.sync().import_errors == {}
        yield made


def claim_first(home: Home, dag_id: str) -> tuple[int, HeldTry]:
    """Trigger ``dag_id``, claim its first queued try, and have its DAG's structure read."""
    run_pk = home.trigger(dag_id)
    (queued, *_) = home.schedule(run_pk)
    with statement_scope(home.url) as session:
        claim = claim_try(session, message_of(queued))
        assert isinstance(claim, HeldTry) and claim.version_hash is not None
        dag_version(session, dag_id, claim.version_hash)  # as an earlier try's pass would
    return run_pk, claim


def test_a_chain_hop_is_one_statement(home: Home) -> None:
    run_pk, claim = claim_first(home, "chain")
    with counting_statements(home.url) as counter:
        recorded, ready = end_claimed(home.url, claim, Succeeded())
    assert recorded and [enqueue.task_id for enqueue in ready] == ["b"]
    assert len(counter.statements) == 1
    assert home.states(run_pk) == {"a": TI.SUCCESS, "b": TI.QUEUED, "c": TI.NONE}
    b = home.ti(run_pk, "b")
    assert (b.try_number, b.fence_token, b.queued_at is not None) == (1, None, True)
    assert home.ti(run_pk, "a").end_date == b.queued_at  # one statement, one moment


def test_a_claim_reads_no_part_of_the_structure_but_once_per_version(
    home: Home, pg_url: str
) -> None:
    # The store's connections in another zone than UTC, as the server's default may be.
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE {pg_url.rsplit('/', 1)[1]} SET timezone = 'Asia/Kolkata'")
    get_engine(home.url).dispose()
    _, first = claim_first(home, "alerting")  # the structure is read with the first claim
    assert (first.task_spec.downstream, first.run["params"]) == (("alert",), {})
    (queued,) = home.schedule(home.trigger("alerting", conf={"day": "monday"}))
    second = message_of(queued)

    with counting_statements(home.url) as counter, statement_scope(home.url) as session:
        claim = claim_try(session, second)

    assert isinstance(claim, HeldTry) and claim.task_spec.downstream == ("alert",)
    assert claim.run["conf"] == claim.run["params"] == {"day": "monday"}
    # Read as the driver returns them (in the connection's zone), the run's datetimes are UTC.
    assert claim.run["logical_date"].tzinfo == dt.UTC
    # One statement: the compare-and-set, joined with the run and the DAG, reads no JSON.
    assert len(counter.statements) == 1
    assert "structure" not in counter.statements[0]


def test_a_try_that_lost_its_task_instance_records_and_queues_nothing(home: Home) -> None:
    run_pk, claim = claim_first(home, "chain")
    with session_scope(home.url) as session:  # a zombie sweep got there first
        assert transition_tis(session, [claim.fence.ti_id], [TI.RUNNING], TI.FAILED) == 1

    assert end_claimed(home.url, claim, Succeeded()) == (False, [])

    assert home.states(run_pk) == {"a": TI.FAILED, "b": TI.NONE, "c": TI.NONE}


def test_a_try_waiting_for_a_slot_sends_the_hop_to_the_full_pass(home: Home) -> None:
    run_pk, claim = claim_first(home, "solo_side")
    assert home.states(run_pk)["c"] == TI.SCHEDULED  # waits for the pool's one slot

    recorded, ready = end_claimed(home.url, claim, Succeeded())

    assert recorded and len(ready) == 1
    states = home.states(run_pk)
    assert states["a"] == TI.SUCCESS
    assert sum(state == TI.QUEUED for state in states.values()) == 1  # never two in one slot
