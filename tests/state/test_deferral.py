"""A deferred try in the store: ``running -> deferred`` frees the slot and costs no try, the
trigger's row is written with the end, triggerers claim, beat and fire it fenced by their token,
a late event of a triggerer that lost the row is refused, a timeout fails, a clear cancels.

Tries are claimed and ended with the supervisor's own functions (SQLite).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from state.core.db import session_scope
from state.core.enums import TASK_INSTANCE_TRANSITIONS, TaskInstanceState
from state.core.models import DagRun, Trigger, utcnow
from state.engine.deferral import (
    TriggerOutcome,
    beat_triggers,
    claim_triggers,
    fire_triggers,
    time_out_deferrals,
)
from state.engine.outcomes import Deferred, Succeeded
from state.engine.runs import clear_task_instances
from state.engine.scheduling import Enqueue
from state.engine.try_life import HeldTry
from tests.state.harness import Home, claim, end_claimed, schedule, tradewind_home

TI = TaskInstanceState

DAG_SOURCE = """
from tradewind import DAG, task

@task(pool="solo")
def wait():
    return 1

with DAG("waits"):
    wait.override(task_id="a")()
    wait.override(task_id="b")()
"""
DEFERRAL = Deferred("some.Trigger", {"x": 1}, "execute_complete", {"note": "n"}, 60.0)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    from state.engine.pools import set_pool

    with tradewind_home(tmp_path, monkeypatch) as made:
        with session_scope(made.url) as session:
            set_pool(session, "solo", 1)
        made.write_dag(DAG_SOURCE)
        assert made.sync().import_errors == {}
        yield made


def deferred_a(home: Home) -> tuple[int, HeldTry]:
    run_pk = home.trigger("waits")
    [first] = schedule(home, run_pk)
    held = claim(home, first)
    ended = end_claimed(home.url, held, DEFERRAL)
    assert ended.recorded
    return run_pk, held


def test_the_table_allows_deferral_and_its_ways_out() -> None:
    assert TI.DEFERRED in TASK_INSTANCE_TRANSITIONS[TI.RUNNING]
    assert TASK_INSTANCE_TRANSITIONS[TI.DEFERRED] == {TI.SCHEDULED, TI.FAILED, TI.NONE, TI.REMOVED}


def test_a_deferral_frees_the_slot_costs_no_try_and_the_event_resumes_the_same_try(
    home: Home,
) -> None:
    run_pk, _held = deferred_a(home)
    a = home.ti(run_pk, "a")
    assert (a.state, a.next_method, a.next_kwargs) == (
        TI.DEFERRED,
        "execute_complete",
        {"note": "n"},
    )
    # The one slot of "solo" went to b with a's end.
    assert home.ti(run_pk, "b").state == TI.QUEUED
    with session_scope(home.url) as session:
        [claimed] = claim_triggers(session, "t1", "token-1", 10, utcnow())
        assert (claimed.classpath, claimed.kwargs, claimed.ti_id) == (
            "some.Trigger",
            {"x": 1},
            a.id,
        )
        row = session.get_one(Trigger, claimed.id)
        assert row.timeout_at is not None and row.try_number == 1
        assert fire_triggers(session, "token-1", [TriggerOutcome(claimed.id, {"at": 1})]) == (1, 0)
    a = home.ti(run_pk, "a")
    assert a.state == TI.SCHEDULED and a.next_kwargs == {"note": "n", "event": {"at": 1}}
    # Queued again, the same try (1) is claimed, handed its resume point; its end spends it.
    b = claim(home, Enqueue.of(home.ti(run_pk, "b")))
    end_claimed(home.url, b, Succeeded())  # b's end hands the slot to a
    assert home.ti(run_pk, "a").state == TI.QUEUED
    resumed = claim(home, Enqueue.of(home.ti(run_pk, "a")))
    assert resumed.fence.try_number == 1 and resumed.next_method == "execute_complete"
    assert resumed.next_kwargs == {"note": "n", "event": {"at": 1}}


def test_a_triggerer_that_stopped_beating_loses_its_triggers_and_its_late_event_is_refused(
    home: Home,
) -> None:
    run_pk, _ = deferred_a(home)
    now = utcnow()
    with session_scope(home.url) as session:
        [first] = claim_triggers(session, "t1", "token-1", 10, now - dt.timedelta(seconds=30))
        # Held and beating: nobody else takes it.
        assert claim_triggers(session, "t2", "token-2", 10, now - dt.timedelta(seconds=30)) == []
    later = now + dt.timedelta(seconds=60)
    with session_scope(home.url) as session:
        [taken] = claim_triggers(session, "t2", "token-2", 10, later - dt.timedelta(seconds=30))
        assert taken.id == first.id
    with session_scope(home.url) as session:
        assert beat_triggers(session, "token-1", [first.id]) == set()  # no longer t1's
        late = fire_triggers(session, "token-1", [TriggerOutcome(first.id, "late")])
        assert late == (0, 1)
    assert home.ti(run_pk, "a").state == TI.DEFERRED
    with session_scope(home.url) as session:
        assert fire_triggers(session, "token-2", [TriggerOutcome(first.id, "live")]) == (1, 0)
        assert fire_triggers(session, "token-2", [TriggerOutcome(first.id, "twice")]) == (0, 1)
    assert home.ti(run_pk, "a").next_kwargs == {"note": "n", "event": "live"}


def test_a_deferral_past_its_timeout_fails_the_task_in_one_line(home: Home) -> None:
    run_pk, _ = deferred_a(home)
    with session_scope(home.url) as session:
        assert time_out_deferrals(session, utcnow()) == []
        [timed_out] = time_out_deferrals(session, utcnow() + dt.timedelta(seconds=61))
    assert timed_out.task_id == "a" and timed_out.error.startswith("deferral timed out")
    a = home.ti(run_pk, "a")
    assert (a.state, a.try_number, a.error) == (TI.FAILED, 1, timed_out.error)
    assert "\n" not in timed_out.error and a.next_method is None


def test_clearing_a_deferred_task_cancels_its_trigger(home: Home) -> None:
    run_pk, _ = deferred_a(home)
    with session_scope(home.url) as session:
        [claimed] = claim_triggers(session, "t1", "token-1", 10, utcnow())
    with session_scope(home.url) as session:
        assert clear_task_instances(session, session.get_one(DagRun, run_pk), ["a"]) == 1
    with session_scope(home.url) as session:
        assert session.scalars(select(Trigger.id)).all() == []
        # The triggerer running it finds it gone at its next beat; an event from it is refused.
        assert beat_triggers(session, "token-1", [claimed.id]) == set()
        assert fire_triggers(session, "token-1", [TriggerOutcome(claimed.id, 1)]) == (0, 1)
    a = home.ti(run_pk, "a")
    assert (a.state, a.next_method, a.next_kwargs) == (TI.NONE, None, None)


def test_a_marked_deferred_task_instance_leaves_its_trigger_to_nobody(home: Home) -> None:
    from state.core.transitions import mark_tis
    from state.engine.deferral import drop_stale_triggers

    run_pk, held = deferred_a(home)
    with session_scope(home.url) as session:
        assert mark_tis(session, [held.fence.ti_id], [TI.DEFERRED], TI.SUCCESS) == 1
    with session_scope(home.url) as session:
        assert claim_triggers(session, "t1", "token-1", 10, utcnow()) == []
        assert drop_stale_triggers(session) == 1
        assert session.scalars(select(Trigger.id)).all() == []
    assert home.ti(run_pk, "a").state == TI.SUCCESS
