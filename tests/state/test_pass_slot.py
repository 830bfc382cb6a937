"""A try with nothing downstream hands its slot to the first try of its run waiting for one.

Without it, a run with more task instances than its pool has slots went on at one pool's worth
per scheduler loop (128 task instances a second with the default pool, however fast the
workers). Tries are claimed and ended with the supervisor's own functions (``worker.claim``,
``worker.execute._end_try``), on SQLite and on a real PostgreSQL, where it is one statement.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker_config import message_of
from state.db import session_scope, statement_scope
from state.enums import TaskInstanceState
from state.pools import set_pool
from state.transitions import transition_tis
from tests.state.harness import Home, counting_statements, tradewind_home
from worker.claim import Claim, Final, claim_try
from worker.execute import _end_try

TI = TaskInstanceState
PG_DATABASE_PREFIX = "tw_pass_slot_"

# Three independent tasks sharing the one slot of pool "solo", and one in the default pool.
FAN_DAG = """
from tradewind import DAG, task

@task
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


def claim_first(home: Home) -> tuple[int, Claim]:
    """Trigger ``fan`` and claim its try queued in pool "solo" (a, the first by id)."""
    run_pk = home.trigger("fan")
    queued = {enqueue.task_id: enqueue for enqueue in home.schedule(run_pk)}
    assert set(queued) == {"a", "elsewhere"}
    with statement_scope(home.url) as session:
        claim = claim_try(session, message_of(queued["a"]))
    assert isinstance(claim, Claim)
    return run_pk, claim


def test_the_first_try_waiting_in_the_pool_takes_the_slot(fan: Home) -> None:
    run_pk, claim = claim_first(fan)
    assert fan.states(run_pk)["b"] == fan.states(run_pk)["c"] == TI.SCHEDULED
    with counting_statements(fan.url) as counter:
        recorded, ready = _end_try(fan.url, claim, Final(TI.SUCCESS))

    assert recorded and [enqueue.task_id for enqueue in ready] == ["b"]
    states = fan.states(run_pk)
    assert (states["a"], states["b"], states["c"]) == (TI.SUCCESS, TI.QUEUED, TI.SCHEDULED)
    b = fan.ti(run_pk, "b")
    assert (b.try_number, b.fence_token, b.queued_at is not None) == (1, None, True)
    if fan.url.startswith("postgresql"):
        assert len(counter.statements) == 1


def test_a_failed_try_hands_its_slot_over_too(fan: Home) -> None:
    run_pk, claim = claim_first(fan)

    recorded, ready = _end_try(fan.url, claim, Final(TI.UP_FOR_RETRY, "boom"))

    assert recorded and [enqueue.task_id for enqueue in ready] == ["b"]
    a = fan.ti(run_pk, "a")
    assert a.state == TI.UP_FOR_RETRY and a.error == "boom"
    assert a.next_retry_at is not None  # the taker's NULL is not the end's parameter


def test_a_pool_lowered_below_what_runs_gets_the_slot_back(fan: Home) -> None:
    run_pk, claim = claim_first(fan)
    with session_scope(fan.url) as session:
        set_pool(session, "solo", 0)

    recorded, ready = _end_try(fan.url, claim, Final(TI.SUCCESS))

    assert recorded and ready == []
    states = fan.states(run_pk)
    assert (states["a"], states["b"], states["c"]) == (TI.SUCCESS, TI.SCHEDULED, TI.SCHEDULED)


def test_a_dag_that_changed_hands_nothing_over(fan: Home) -> None:
    run_pk, claim = claim_first(fan)
    fan.write_dag(FAN_DAG.replace('with DAG("fan")', 'with DAG("fan", max_active_tasks=1)'))
    assert fan.sync().import_errors == {}  # a new version: its limits are the scheduler's to apply

    recorded, ready = _end_try(fan.url, claim, Final(TI.SUCCESS))

    assert recorded and ready == []
    assert fan.states(run_pk)["b"] == TI.SCHEDULED


def test_a_try_that_lost_its_task_instance_hands_nothing_over(fan: Home) -> None:
    run_pk, claim = claim_first(fan)
    with session_scope(fan.url) as session:  # a zombie sweep got there first
        assert transition_tis(session, [claim.fence.ti_id], [TI.RUNNING], TI.FAILED) == 1

    assert _end_try(fan.url, claim, Final(TI.SUCCESS)) == (False, [])

    states = fan.states(run_pk)
    assert (states["a"], states["b"], states["c"]) == (TI.FAILED, TI.SCHEDULED, TI.SCHEDULED)


def test_a_paused_dag_hands_nothing_over(fan: Home) -> None:
    run_pk, claim = claim_first(fan)
    with session_scope(fan.url) as session:
        fan_model = fan.dag_model("fan")
        fan_model.is_paused = True
        session.merge(fan_model)

    recorded, ready = _end_try(fan.url, claim, Final(TI.SUCCESS))

    assert recorded and ready == []
    assert fan.states(run_pk)["b"] == TI.SCHEDULED
