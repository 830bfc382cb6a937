"""A sensor's try rescheduled: ``running -> up_for_reschedule`` frees its slot (a hand-over
plan), and when the next poke is due the same try is queued again and claimed with a new fence.

Tries are claimed and ended with the supervisor's own functions, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from state.core.db import session_scope
from state.core.enums import TASK_INSTANCE_TRANSITIONS, TaskInstanceState
from state.core.models import utcnow
from state.core.structure import DagStructure
from state.engine.end_plan import FirstWaiting, plan_reschedule
from state.engine.outcomes import Rescheduled
from state.engine.pools import set_pool
from tests.state.harness import Home, claim, end_claimed, schedule, tradewind_home

TI = TaskInstanceState

# Two sensors sharing the one slot of pool "solo".
SENSORS_DAG = """
from tradewind import DAG, task

@task.sensor(poke_interval=60, mode="reschedule", pool="solo")
def wait():
    return False

with DAG("sensors"):
    wait.override(task_id="a")()
    wait.override(task_id="b")()
"""


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def sensors(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Home]:
    env = {"database_url": request.getfixturevalue("pg_url")} if request.param != "sqlite" else {}
    with tradewind_home(tmp_path, monkeypatch, **env) as made:
        with session_scope(made.url) as session:
            set_pool(session, "solo", 1)
        made.write_dag(SENSORS_DAG)
        assert made.sync().import_errors == {}
        yield made


def test_a_reschedule_plans_a_slot_hand_over_to_the_first_waiting_try() -> None:
    assert plan_reschedule(DagStructure(dag_id="sensing")) == FirstWaiting()
    assert TI.UP_FOR_RESCHEDULE in TASK_INSTANCE_TRANSITIONS[TI.RUNNING]
    assert TASK_INSTANCE_TRANSITIONS[TI.UP_FOR_RESCHEDULE] >= {TI.SCHEDULED}


def test_a_rescheduled_try_frees_its_slot_and_its_next_poke_is_the_same_try(
    sensors: Home,
) -> None:
    run_pk = sensors.trigger("sensors")
    [first] = sensors.schedule(run_pk)
    assert first.task_id == "a"
    next_poke = utcnow() + dt.timedelta(seconds=60)
    claimed = claim(sensors, first)

    recorded, ready = end_claimed(sensors.url, claimed, Rescheduled(next_poke))

    # The slot went to b at once, in the end's own statement.
    assert recorded and [enqueue.task_id for enqueue in ready] == ["b"]
    a = sensors.ti(run_pk, "a")
    assert (a.state, a.try_number, a.next_retry_at) == (TI.UP_FOR_RESCHEDULE, 1, next_poke)
    assert schedule(sensors, run_pk, next_poke - dt.timedelta(seconds=1)) == []

    b = claim(sensors, ready[0])
    end_claimed(sensors.url, b, Rescheduled(next_poke))
    [again] = schedule(sensors, run_pk, next_poke)

    assert (again.task_id, again.try_number) == ("a", 1)
    repoke = claim(sensors, again)
    assert repoke.fence.try_number == 1 and repoke.fence.token != claimed.fence.token
    assert sensors.ti(run_pk, "a").state == TI.RUNNING
    assert sensors.run_state(run_pk) == "running"  # a sensor between pokes is no end
