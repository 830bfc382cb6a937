"""A try's life in the store (state/engine/try_life.py): claim, beat, and the record of its outcome.

``judge`` (retry or fail, the retry's time, a success's asset events) is tested without a
database; the claim, the beat and the record on a real SQLite store, through an outage that is a
lost connection raised by the test between the commit and its reply, the one failure a real
server restart cannot be made to show on purpose. The whole outage, with a real PostgreSQL
stopped and started, is tests/integration/test_outages_postgres.py.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from sqlalchemy import update

from broker_config import message_of
from state.core import outage
from state.core.db import session_scope
from state.core.enums import TaskInstanceState
from state.core.models import TaskInstance, utcnow
from state.core.structure import TaskSpec
from state.core.transitions import Fence, TryFenced
from state.engine import try_life
from state.engine.end import Recorded, Verdict
from state.engine.outcomes import Failed, Rescheduled, Skipped, Succeeded
from state.engine.scheduling import Enqueue
from state.engine.try_life import ClaimUnavailable, HeldTry, beat, claim, judge, record
from state.records.assets import OutletEvent
from state.records.values import TIKey
from tests.state.harness import Home
from tests.state.test_outage import lost_connection

TI = TaskInstanceState
AT = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
ONE_TASK = """
from tradewind import DAG, task

@task(retries=1)
def work():
    pass

with DAG("one"):
    work()
"""


PLAIN = TaskSpec()


def held(spec: TaskSpec = PLAIN, try_number: int = 1, max_tries: int = 2) -> HeldTry:
    fence = Fence(1, try_number, "token")
    return HeldTry(fence, TIKey("d", "r", "t", -1), 1, max_tries, 0, "dag.py", spec, {})


# --- judge: the store's decision, no database ---------------------------------------------------


def test_a_failure_with_tries_left_is_retried_after_the_tasks_delay() -> None:
    spec = TaskSpec(retry_delay_seconds=10, retry_exponential_backoff=2.0)

    verdict = judge(held(spec, try_number=2, max_tries=3), Failed("boom"), AT)

    assert (verdict.state, verdict.values["error"]) == (TI.UP_FOR_RETRY, "boom")
    assert verdict.values["next_retry_at"] == AT + dt.timedelta(seconds=20)
    assert verdict.values["deliveries"] == 0  # a supervisor lived to record it


def test_a_retry_policys_delay_wins_over_the_tasks() -> None:
    verdict = judge(held(TaskSpec(retry_delay_seconds=10)), Failed("boom", True, 1.5), AT)

    assert verdict.values["next_retry_at"] == AT + dt.timedelta(seconds=1.5)


@pytest.mark.parametrize(
    ("failed", "try_number"),
    [(Failed("boom", retryable=False), 1), (Failed("boom"), 2)],
    ids=["not retryable", "last try"],
)
def test_a_failure_that_cannot_retry_fails(failed: Failed, try_number: int) -> None:
    verdict = judge(held(try_number=try_number, max_tries=2), failed, AT)

    assert (verdict.state, verdict.values["error"]) == (TI.FAILED, "boom")
    assert "next_retry_at" not in verdict.values


def test_a_success_records_the_asset_events_of_its_outlets() -> None:
    spec = TaskSpec(outlets=({"asset": "s3://out", "name": "out"},))
    sent = ({"uri": "s3://out", "extra": {"rows": 3}},)

    verdict = judge(held(spec), Succeeded(sent, follow=("b",)), AT)

    assert (verdict.state, verdict.values["error"], verdict.follow) == (TI.SUCCESS, None, ("b",))
    assert verdict.asset_events == (OutletEvent("s3://out", "out", "asset", {"rows": 3}),)
    assert judge(held(), Succeeded(sent), AT).asset_events == ()  # no outlets: no events


def test_a_skip_and_a_reschedule() -> None:
    skipped = judge(held(), Skipped("nothing to do"), AT)
    poke = AT + dt.timedelta(minutes=5)
    rescheduled = judge(held(), Rescheduled(poke), AT)

    assert (skipped.state, skipped.values["error"], skipped.follow) == (
        TI.SKIPPED,
        "nothing to do",
        None,
    )
    assert (rescheduled.state, rescheduled.values["next_retry_at"]) == (TI.UP_FOR_RESCHEDULE, poke)
    assert judge(held(), Rescheduled(), AT).values["next_retry_at"] == AT


# --- claim, beat, record on a store ------------------------------------------------------------


def queued(home: Home) -> Enqueue:
    home.write_dag(ONE_TASK)
    assert home.sync().import_errors == {}
    [enqueue] = home.schedule(home.trigger("one"))
    return enqueue


def claimed(home: Home) -> HeldTry:
    held_try = claim(home.url, message_of(queued(home)))
    assert isinstance(held_try, HeldTry)
    return held_try


def test_a_claim_holds_the_try_once_and_drops_its_copy(home: Home) -> None:
    enqueue = queued(home)

    held_try = claim(home.url, message_of(enqueue))
    again = claim(home.url, message_of(enqueue))

    assert isinstance(held_try, HeldTry) and held_try.fence.try_number == 1
    assert again == "stale or duplicate: task instance is running at try 1"
    with session_scope(home.url) as session:
        ti = session.get_one(TaskInstance, enqueue.ti_id)
        assert (ti.state, ti.deliveries, ti.fence_token) == (TI.RUNNING, 2, held_try.fence.token)


def test_a_beat_is_refused_once_the_try_is_given_up(home: Home) -> None:
    held_try = claimed(home)
    beat(home.url, held_try.fence)
    with session_scope(home.url) as session:
        session.execute(
            update(TaskInstance)
            .where(TaskInstance.id == held_try.fence.ti_id)
            .values(state=TI.FAILED)
        )

    with pytest.raises(TryFenced):
        beat(home.url, held_try.fence)


def test_a_failure_recorded_is_retried_by_the_store(home: Home) -> None:
    held_try = claimed(home)

    ended = record(home.url, held_try, Failed("boom"))

    assert ended == (TI.UP_FOR_RETRY, True, [])
    with session_scope(home.url) as session:
        ti = session.get_one(TaskInstance, held_try.fence.ti_id)
        assert (ti.state, ti.error, ti.deliveries) == (TI.UP_FOR_RETRY, "boom", 0)
        assert ti.next_retry_at is not None


def _end_losing_its_first_reply(
    monkeypatch: pytest.MonkeyPatch, refuse_first: bool = False
) -> None:
    """``end_try`` whose first attempt loses its connection: after the commit, or before it."""
    real = try_life.end_try
    calls: list[int] = []

    def end_try(url: str, verdict: Verdict) -> Recorded:
        calls.append(1)
        if len(calls) == 1 and refuse_first:
            raise lost_connection()
        recorded = real(url, verdict)
        if len(calls) == 1:
            raise lost_connection()  # committed; the reply never came back
        return recorded

    monkeypatch.setattr(try_life, "end_try", end_try)


def test_an_end_committed_before_its_reply_was_lost_counts_as_recorded(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    held_try = claimed(home)
    _end_losing_its_first_reply(monkeypatch)

    assert record(home.url, held_try, Succeeded()) == (TI.SUCCESS, True, [])


def test_an_end_refused_after_an_outage_stays_refused(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    held_try = claimed(home)
    _end_losing_its_first_reply(monkeypatch, refuse_first=True)
    # Meanwhile the zombie rule gave the try up: this end is not the one recorded.
    with session_scope(home.url) as session:
        session.execute(
            update(TaskInstance)
            .where(TaskInstance.id == held_try.fence.ti_id)
            .values(state=TI.FAILED)
        )

    assert record(home.url, held_try, Succeeded()) == (TI.SUCCESS, False, [])


def test_a_claim_that_cannot_reach_the_store_in_time_is_unavailable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(outage._budget, "seconds", 0.3)
    message = message_of(Enqueue(7, 1, "d", "r", "t", -1, "default"))
    nowhere = "postgresql://postgres@127.0.0.1:1/none"  # nothing listens on port 1

    with pytest.raises(ClaimUnavailable, match="still unavailable after"):
        claim(nowhere, message)


def test_a_claim_through_a_short_outage_claims_once(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    enqueue = queued(home)
    real = try_life.claim_try
    calls: list[int] = []

    def flaky(*args: Any, **kwargs: Any) -> HeldTry | str:
        calls.append(1)
        if len(calls) < 3:
            raise lost_connection()
        return real(*args, **kwargs)

    monkeypatch.setattr(try_life, "claim_try", flaky)
    held_try = claim(home.url, message_of(enqueue))

    assert isinstance(held_try, HeldTry) and held_try.fence.try_number == 1
    with session_scope(home.url) as session:
        ti = session.get_one(TaskInstance, enqueue.ti_id)
        assert (ti.state, ti.deliveries) == (TI.RUNNING, 1)
        assert ti.last_heartbeat is not None
        assert utcnow() - ti.last_heartbeat.replace(tzinfo=dt.UTC) < dt.timedelta(minutes=1)
