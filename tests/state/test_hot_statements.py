"""The contract of ``state.core.dialects.HotStatements``: the same tests on SQLite and on
PostgreSQL.

Each statement every try runs is driven through the dialect chosen for the store's URL, on a
migrated store with the DAGs of the hand-over tests: the claim, the beat, the end and its
hand-over, the queuing of ready tries, and the run's lock.
"""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from state.core.db import session_scope, statement_scope
from state.core.dialects import (
    Claimed,
    FirstInPool,
    NextByName,
    SlotTaker,
    StoreDialect,
    statements_for,
    statements_of,
)
from state.core.enums import DagRunState, TaskInstanceState
from state.core.models import DagModel, DagRun, utcnow
from state.core.transitions import INCREMENT, Fence, Increment, TryFenced, transition_tis
from state.engine.pools import set_pool
from state.engine.scheduling import Enqueue
from tests.state.harness import HAND_OVER_DAGS, Home, counting_statements, tradewind_home

TI = TaskInstanceState
PG_DATABASE_PREFIX = "tw_hot_"
#: Statements a claim sends: PostgreSQL's joins the run and the DAG; SQLite reads them after.
CLAIM_STATEMENTS = {"postgresql": 1, "sqlite": 2}


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def store(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Home]:
    """A migrated store of the dialect named by the parameter, with the hand-over DAGs."""
    env = {}
    if request.param == "postgresql":
        env["database_url"] = request.getfixturevalue("pg_url")
    with tradewind_home(tmp_path, monkeypatch, **env) as home:
        with session_scope(home.url) as session:
            set_pool(session, "solo", 1)
        home.write_dag(HAND_OVER_DAGS)
        assert home.sync().import_errors == {}
        yield home


def hot(home: Home) -> StoreDialect:
    return statements_for(home.url)


def queued_try(home: Home, dag_id: str) -> tuple[int, Enqueue]:
    """A new run of ``dag_id`` and its first try queued by a pass."""
    run_pk = home.trigger(dag_id)
    (queued, *_) = home.schedule(run_pk)
    return run_pk, queued


def claim(
    home: Home, queued: Enqueue, token: str, deliveries: Increment | int = INCREMENT
) -> Claimed | None:
    now = utcnow()
    values = {
        "fence_token": token,
        "hostname": "here",
        "pid": 1,
        "start_date": now,
        "last_heartbeat": now,
        "end_date": None,
        "deliveries": deliveries,
    }
    with statement_scope(home.url) as session:
        return hot(home).claim(session, queued.ti_id, queued.try_number, values)


def claimed_try(home: Home, dag_id: str) -> tuple[int, Fence, str]:
    """A run of ``dag_id`` whose first try is claimed: its run, the try's fence, the version."""
    run_pk, queued = queued_try(home, dag_id)
    token = uuid.uuid4().hex
    claimed = claim(home, queued, token)
    assert claimed is not None
    return run_pk, Fence(queued.ti_id, queued.try_number, token), claimed.run.run_version


def end_and_take(
    home: Home, fence: Fence, run_pk: int, taker: SlotTaker, version: str
) -> tuple[bool, list[Any]]:
    now = utcnow()
    end = (TI.SUCCESS, {"end_date": now, "error": None, "deliveries": 0})
    with statement_scope(home.url) as session:
        recorded, rows = hot(home).end_and_take(session, fence, end, run_pk, taker, version, now)
    return recorded, list(rows)


def test_the_dialect_is_chosen_once_per_url_and_is_the_sessions(store: Home) -> None:
    with session_scope(store.url) as session:
        assert statements_of(session) is statements_for(store.url)
    with pytest.raises(NotImplementedError, match="mysql"):
        statements_for("mysql://somewhere/db")


def test_a_claim_wins_once_and_returns_what_the_try_needs(store: Home) -> None:
    run_pk, queued = queued_try(store, "chain")

    with counting_statements(store.url) as counter:
        claimed = claim(store, queued, "tok")

    assert claimed is not None
    backend = statements_for(store.url).name
    assert len(counter.statements) == CLAIM_STATEMENTS[backend]
    ti, run = claimed
    assert (ti.id, ti.task_id, ti.try_number, ti.deliveries) == (queued.ti_id, "a", 1, 1)
    assert (run.run_pk, run.run_version, run.run_type) == (
        run_pk,
        store.run(run_pk).version_hash,
        "manual",
    )
    assert run.dag_version == run.run_version and run.fileloc.endswith("dags.py")
    assert run.logical_date is None or run.logical_date.tzinfo == dt.UTC
    row = store.ti(run_pk, "a")
    assert (row.state, row.fence_token, row.hostname) == (TI.RUNNING, "tok", "here")


def test_a_duplicate_or_stale_claim_loses(store: Home) -> None:
    run_pk, queued = queued_try(store, "chain")
    assert claim(store, queued, "first") is not None

    assert claim(store, queued, "duplicate") is None  # the same try, delivered twice
    stale = Enqueue(**{**queued.__dict__, "try_number": queued.try_number + 1})
    assert claim(store, stale, "stale") is None  # another try than the one queued
    assert store.ti(run_pk, "a").fence_token == "first"


def test_a_claim_writes_its_values_whatever_an_earlier_claim_wrote(store: Home) -> None:
    # The texts compiled once are kept by the statement's shape: a claim writing a plain value
    # where an earlier one wrote an expression must not run the earlier one's text.
    _, first = queued_try(store, "chain")
    second_run, second = queued_try(store, "chain")
    assert claim(store, first, "one") is not None

    claimed = claim(store, second, "two", deliveries=7)

    assert claimed is not None and claimed.ti.deliveries == 7
    assert store.ti(second_run, "a").deliveries == 7


def test_a_beat_is_refused_unless_the_fence_holds(store: Home) -> None:
    run_pk, fence, _ = claimed_try(store, "chain")
    before = store.ti(run_pk, "a").last_heartbeat

    with session_scope(store.url) as session:
        hot(store).beat(session, fence)
    assert store.ti(run_pk, "a").last_heartbeat > before

    for wrong in (
        Fence(fence.ti_id, fence.try_number, "other"),
        Fence(fence.ti_id, 2, fence.token),
    ):
        with pytest.raises(TryFenced), session_scope(store.url) as session:
            hot(store).beat(session, wrong)


def test_an_end_hands_its_slot_to_the_successor_by_name(store: Home) -> None:
    run_pk, fence, version = claimed_try(store, "chain")
    run_id = store.run(run_pk).run_id

    with counting_statements(store.url) as counter:
        recorded, rows = end_and_take(
            store, fence, run_pk, NextByName("chain", run_id, "b"), version
        )

    assert recorded and [(row.task_id, row.try_number) for row in rows] == [("b", 1)]
    assert Enqueue.of(rows[0]).queue == store.ti(run_pk, "b").queue
    assert store.states(run_pk) == {"a": TI.SUCCESS, "b": TI.QUEUED, "c": TI.NONE}
    if statements_for(store.url).name == "postgresql":
        assert len(counter.statements) == 1  # the end, the run's lock and the queuing


@pytest.mark.parametrize("among", [None, ("c",)])
def test_an_end_hands_its_slot_to_the_first_try_waiting_in_its_pool(
    store: Home, among: tuple[str, ...] | None
) -> None:
    run_pk, fence, version = claimed_try(store, "solo_side")
    run_id = store.run(run_pk).run_id
    assert store.states(run_pk)["c"] == TI.SCHEDULED  # waits for the pool's one slot

    taker = FirstInPool("solo_side", run_id, "solo", among)
    recorded, rows = end_and_take(store, fence, run_pk, taker, version)

    assert recorded and [row.task_id for row in rows] == ["c"]
    assert store.states(run_pk) == {"a": TI.SUCCESS, "b": TI.NONE, "c": TI.QUEUED}


def test_an_end_hands_nothing_to_a_task_not_among_those_named(store: Home) -> None:
    run_pk, fence, version = claimed_try(store, "solo_side")
    run_id = store.run(run_pk).run_id

    taker = FirstInPool("solo_side", run_id, "solo", ("b",))
    assert end_and_take(store, fence, run_pk, taker, version) == (True, [])

    assert store.states(run_pk) == {"a": TI.SUCCESS, "b": TI.NONE, "c": TI.SCHEDULED}


def test_a_lost_try_records_nothing_and_hands_nothing_over(store: Home) -> None:
    run_pk, fence, version = claimed_try(store, "solo_side")
    with session_scope(store.url) as session:  # a zombie sweep got there first
        assert transition_tis(session, [fence.ti_id], [TI.RUNNING], TI.FAILED) == 1
    run_id = store.run(run_pk).run_id

    taker = FirstInPool("solo_side", run_id, "solo")
    assert end_and_take(store, fence, run_pk, taker, version) == (False, [])

    assert store.states(run_pk) == {"a": TI.FAILED, "b": TI.NONE, "c": TI.SCHEDULED}


@pytest.mark.parametrize("change", ["paused", "another version"])
def test_an_end_hands_nothing_over_unless_the_run_may(store: Home, change: str) -> None:
    run_pk, fence, version = claimed_try(store, "chain")
    run_id = store.run(run_pk).run_id
    with session_scope(store.url) as session:
        values = {"is_paused": True} if change == "paused" else {"version_hash": "other"}
        session.execute(update(DagModel).where(DagModel.dag_id == "chain").values(**values))

    taker = NextByName("chain", run_id, "b")
    assert end_and_take(store, fence, run_pk, taker, version) == (True, [])

    assert store.states(run_pk) == {"a": TI.SUCCESS, "b": TI.NONE, "c": TI.NONE}


def test_queue_starts_a_try_of_each_scheduled_task_instance_once(store: Home) -> None:
    run_pk, _ = queued_try(store, "chain")
    b, c = store.ti(run_pk, "b").id, store.ti(run_pk, "c").id
    with session_scope(store.url) as session:
        transition_tis(session, [b], [TI.NONE], TI.SCHEDULED)

    with session_scope(store.url) as session:
        rows = hot(store).queue(session, [b, c], utcnow())  # c is not scheduled
    assert [(row.id, row.try_number, row.fence_token) for row in rows] == [(b, 1, None)]
    assert Enqueue.of(rows[0]).task_id == "b"
    assert store.states(run_pk) == {"a": TI.QUEUED, "b": TI.QUEUED, "c": TI.NONE}

    with session_scope(store.url) as session:
        assert hot(store).queue(session, [b], utcnow()) == []  # queued already


def test_the_run_lock_reads_the_run_and_its_dags_version(store: Home) -> None:
    run_pk, _ = queued_try(store, "chain")
    version = store.dag_model("chain").version_hash

    with session_scope(store.url) as session:
        head = hot(store).lock_run(session, run_pk)
        assert head is not None
        assert (head.dag_id, head.state, head.dag_version, head.is_paused) == (
            "chain", DagRunState.RUNNING, version, False,
        )  # fmt: skip
        locked = hot(store).try_lock_run(session, run_pk)
        assert locked is not None
        run, dag_version, paused = locked
        assert (isinstance(run, DagRun), run.id, dag_version, paused) == (
            True,
            run_pk,
            version,
            False,
        )
    with session_scope(store.url) as session:
        assert hot(store).lock_run(session, run_pk + 100) is None


def test_a_held_run_is_waited_for_by_lock_run(store: Home) -> None:
    run_pk, _ = queued_try(store, "chain")
    got: list[str] = []

    def wait() -> None:
        with session_scope(store.url) as waiter:
            head = hot(store).lock_run(waiter, run_pk)
            got.append(head.state if head is not None else "none")

    with session_scope(store.url) as holder:
        assert hot(store).try_lock_run(holder, run_pk) is not None
        holder.execute(update(DagRun).where(DagRun.id == run_pk).values(state="success"))
        waiter = threading.Thread(target=wait)
        waiter.start()
        waiter.join(0.5)
        assert waiter.is_alive() and not got  # waits while the holder has the run
    waiter.join(10)
    assert got == [DagRunState.SUCCESS]  # and reads what the holder committed


@pytest.mark.integration
def test_a_held_run_is_skipped_by_try_lock_run_on_postgresql(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pg_url: str
) -> None:
    # SQLite has one writer at a time: a second pass waits at BEGIN, there is nothing to skip.
    with tradewind_home(tmp_path, monkeypatch, database_url=pg_url) as home:
        home.write_dag(HAND_OVER_DAGS)
        home.sync()
        run_pk, _ = queued_try(home, "chain")
        with session_scope(home.url) as holder:
            assert hot(home).try_lock_run(holder, run_pk) is not None
            with session_scope(home.url) as other:
                assert hot(home).try_lock_run(other, run_pk) is None  # the scheduler moves on
        with session_scope(home.url) as other:
            assert hot(home).try_lock_run(other, run_pk) is not None  # released at commit
