"""A claim that could not reach the store in time gives its message back (worker/celery_app.py).

The claim's own ride through an outage is the store's, tested in tests/state/test_try_life.py.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from celery.exceptions import Reject

from broker_config import message_of
from state.engine.scheduling import Enqueue
from state.engine.try_life import ClaimUnavailable
from worker import celery_app


def test_a_claim_that_cannot_reach_the_store_in_time_gives_its_message_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    message = message_of(Enqueue(7, 1, "d", "r", "t", -1, "default"))

    def unavailable(*_: Any) -> str:
        raise ClaimUnavailable("claiming d/r/t try 1: the SQL store still unavailable")

    monkeypatch.setattr(celery_app, "execute", unavailable)
    monkeypatch.setattr(celery_app, "get_settings", lambda: "the settings")
    task = SimpleNamespace(app=None)
    with pytest.raises(Reject) as rejected:
        celery_app.execute_task_instance(task, message=message.model_dump())
    assert rejected.value.requeue is True
