"""The claim and the end of a try through an outage of the store (worker/claim.py, celery_app).

On a real SQLite store: the outage is a lost connection raised by the test between the commit and
its reply, the one failure a real server restart cannot be made to show on purpose. The whole
outage, with a real PostgreSQL stopped and started, is tests/integration/test_outages_postgres.py.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from celery.exceptions import Reject
from sqlalchemy import update

from broker_config import message_of
from state import outage
from state.db import session_scope
from state.end import Recorded, end_try
from state.enums import TaskInstanceState
from state.models import TaskInstance, utcnow
from state.scheduling import Enqueue
from tests.scheduler.test_liveness_faults import first_try, make_home, published
from tests.state.harness import Home
from tests.state.test_outage import lost_connection
from worker import celery_app
from worker.claim import (
    Claim,
    ClaimUnavailable,
    Final,
    claim_through_outage,
    claim_try,
    end_through_outage,
)

__all__ = ["make_home", "published"]  # the fixtures, imported for pytest
TI = TaskInstanceState
SUCCESS = Final(TI.SUCCESS)


def _claimed(home: Home, published: list[Enqueue]) -> Claim:
    _, enqueue = first_try(home, published)
    claim = claim_through_outage(home.url, message_of(enqueue))
    assert isinstance(claim, Claim)
    return claim


def _end_losing_its_first_reply(home: Home, claim: Claim) -> Callable[[], Recorded]:
    calls: list[int] = []

    def end() -> Recorded:
        calls.append(1)
        recorded = end_try(home.url, claim.end(SUCCESS))
        if len(calls) == 1:
            raise lost_connection()  # committed; the reply never came back
        return recorded

    return end


def test_an_end_committed_before_its_reply_was_lost_counts_as_recorded(
    make_home: Callable[..., Home], published: list[Enqueue]
) -> None:
    home = make_home()
    claim = _claimed(home, published)
    end = _end_losing_its_first_reply(home, claim)
    assert end_through_outage(home.url, claim, SUCCESS, end) == (True, [])


def test_an_end_refused_after_an_outage_stays_refused(
    make_home: Callable[..., Home], published: list[Enqueue]
) -> None:
    home = make_home()
    claim = _claimed(home, published)
    calls: list[int] = []

    def end() -> Recorded:
        calls.append(1)
        if len(calls) == 1:
            raise lost_connection()
        return end_try(home.url, claim.end(SUCCESS))

    # Meanwhile the zombie rule gave the try up: this end is not the one recorded.
    with session_scope(home.url) as session:
        session.execute(
            update(TaskInstance).where(TaskInstance.id == claim.fence.ti_id).values(state=TI.FAILED)
        )
    assert end_through_outage(home.url, claim, SUCCESS, end) == (False, [])


def test_a_claim_that_cannot_reach_the_store_in_time_gives_its_message_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(outage._budget, "seconds", 0.3)
    message = message_of(Enqueue(7, 1, "d", "r", "t", -1, "default"))
    nowhere = "postgresql://postgres@127.0.0.1:1/none"  # nothing listens on port 1
    with pytest.raises(ClaimUnavailable, match="still unavailable after"):
        claim_through_outage(nowhere, message)

    def unavailable(*_: Any) -> str:
        raise ClaimUnavailable("claiming d/r/t try 1: the SQL store still unavailable")

    monkeypatch.setattr(celery_app, "execute", unavailable)
    monkeypatch.setattr(celery_app, "get_settings", lambda: "the settings")
    task = SimpleNamespace(app=None)
    with pytest.raises(Reject) as rejected:
        celery_app.execute_task_instance(task, message=message.model_dump())
    assert rejected.value.requeue is True


def test_a_claim_through_a_short_outage_claims_once(
    make_home: Callable[..., Home], published: list[Enqueue], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = make_home()
    _, enqueue = first_try(home, published)
    real = claim_try
    calls: list[int] = []

    def flaky(*args: Any, **kwargs: Any) -> Claim | str:
        calls.append(1)
        if len(calls) < 3:
            raise lost_connection()
        return real(*args, **kwargs)

    monkeypatch.setattr("worker.claim.claim_try", flaky)
    claim = claim_through_outage(home.url, message_of(enqueue))
    assert isinstance(claim, Claim) and claim.fence.try_number == 1
    with session_scope(home.url) as session:
        ti = session.get(TaskInstance, enqueue.ti_id)
        assert ti is not None and (ti.state, ti.deliveries) == (TI.RUNNING, 1)
        assert ti.last_heartbeat is not None
        assert utcnow() - ti.last_heartbeat.replace(tzinfo=dt.UTC) < dt.timedelta(minutes=1)
