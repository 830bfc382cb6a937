"""A checkpoint write is fenced by its try, on SQLite (two statements) and PostgreSQL (one)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from state.core.db import session_scope
from state.core.enums import TaskInstanceState
from state.core.models import TaskInstance
from state.core.transitions import Fence, TryFenced
from state.records.checkpoints import read_checkpoints, write_checkpoint
from state.records.values import TIKey
from tests.stores import migrated

KEY = TIKey("d", "r", "t", -1)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    made = (
        f"sqlite:///{tmp_path / 'tradewind.db'}"
        if request.param == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    migrated(made)
    return made


def running_try(url: str, state: TaskInstanceState = TaskInstanceState.RUNNING) -> Fence:
    with session_scope(url) as session:
        ti = TaskInstance(**KEY.__dict__, state=state, try_number=1, max_tries=2, fence_token="t1")
        session.add(ti)
        session.flush()
        return Fence(ti.id, 1, "t1")


def batches(url: str) -> dict[int, str]:
    with session_scope(url) as session:
        return read_checkpoints(session, KEY).batches


def heartbeat(url: str, fence: Fence) -> object:
    with session_scope(url) as session:
        return session.scalar(select(TaskInstance.last_heartbeat).filter_by(id=fence.ti_id))


def test_the_holder_writes_and_rewrites_a_batch_and_its_heartbeat_moves(url: str) -> None:
    fence = running_try(url)
    with session_scope(url) as session:
        write_checkpoint(session, fence, KEY, "_iterable_batch_0", "[1]")
    first = heartbeat(url, fence)
    with session_scope(url) as session:
        write_checkpoint(session, fence, KEY, "_iterable_batch_0", "[1, 2]")

    assert batches(url) == {0: "[1, 2]"}
    assert first is not None and heartbeat(url, fence) >= first  # type: ignore[operator]


@pytest.mark.parametrize(
    ("fence", "state"),
    [
        (Fence(0, 1, "stale"), TaskInstanceState.RUNNING),  # another try's token
        (Fence(0, 2, "t1"), TaskInstanceState.RUNNING),  # another try number
        (Fence(0, 1, "t1"), TaskInstanceState.UP_FOR_RETRY),  # the try is over
    ],
)
def test_a_try_that_no_longer_holds_the_task_instance_writes_nothing(
    url: str, fence: Fence, state: TaskInstanceState
) -> None:
    holder = running_try(url, state)
    stale = Fence(holder.ti_id, fence.try_number, fence.token)
    refused = pytest.raises(TryFenced, match=f"task instance {holder.ti_id}")
    with refused, session_scope(url) as session:
        write_checkpoint(session, stale, KEY, "_iterable_batch_0", "[1]")

    assert batches(url) == {}
