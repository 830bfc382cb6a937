"""The state store as the supervisor serves it: sizes, expiry, clears, and checkpoint rows."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import select

from state.core.db import session_scope
from state.core.models import DagRun, TaskInstance, TaskStateValue
from state.engine.runs import clear_task_instances
from state.records import values
from state.records.values import purge_expired_states
from tests.state.harness import StatementCounter
from worker import wire as p
from worker.supervisor.execute import task_details
from worker.supervisor.logs import TryLog
from worker.supervisor.requests import handle
from worker.supervisor.try_context import TryContext

from .iterable_support import Stack

DAG = """
from tradewind import dag, task

@task
def only():
    return 1

@dag(dag_id="store_dag")
def store_dag():
    only()

store_dag()
"""


@pytest.fixture
def stack(tmp_path: Path) -> Stack:
    stack = Stack(tmp_path)
    stack.add_dag("store_dag", DAG)
    return stack


@pytest.fixture
def ctx(stack: Stack, tmp_path: Path) -> Iterator[TryContext]:
    run_pk = stack.trigger("store_dag")
    (enqueue,) = stack.schedule(run_pk)
    claim = stack.claim(enqueue)
    log = TryLog(tmp_path / "try.log")
    # TRADEWIND_STATE_STORE_MAX_VALUE_BYTES's default
    yield TryContext(stack.url, claim.fence, claim.ti, task_details(claim), log, 65536)
    log.close()


def ask(ctx: TryContext, request: p.Message) -> p.Message:
    return handle(ctx, request)


def log_text(ctx: TryContext) -> str:
    return ctx.log.path.read_text()


@pytest.fixture
def counter(ctx: TryContext) -> Iterator[StatementCounter]:
    counter = StatementCounter(ctx.url)
    yield counter
    counter.close()


def test_a_value_is_read_back_as_written(ctx: TryContext) -> None:
    assert isinstance(ask(ctx, p.SetStateValue(key="k", value={"a": [1, 2]})), p.OKResponse)

    assert ask(ctx, p.GetStateValue(key="k")) == p.StateValueResult(found=True, value={"a": [1, 2]})


def test_an_expired_value_is_not_returned_and_housekeeping_deletes_it(ctx: TryContext) -> None:
    past = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
    future = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    ask(ctx, p.SetStateValue(key="old", value=1, expires_at=past))
    ask(ctx, p.SetStateValue(key="new", value=2, expires_at=future))

    assert ask(ctx, p.GetStateValue(key="old")) == p.StateValueResult(found=False)
    assert ask(ctx, p.GetStateValue(key="new")) == p.StateValueResult(found=True, value=2)
    with session_scope(ctx.url) as session:
        assert purge_expired_states(session) == 1
        keys = session.scalars(select(TaskStateValue.key)).all()
    assert keys == ["new"]


def test_a_value_over_the_warning_size_is_written_with_a_warning(ctx: TryContext) -> None:
    ctx = replace(ctx, max_value_bytes=100)
    value = "é" * 20  # stored as JSON text: 20 escapes of 6 bytes and two quotes

    reply = ask(ctx, p.SetStateValue(key="big", value=value))

    assert isinstance(reply, p.OKResponse)
    with session_scope(ctx.url) as session:
        stored = session.scalars(select(TaskStateValue.value)).one()
    assert len(stored.encode()) == 122
    assert "state value 'big' is 122 bytes" in log_text(ctx)
    assert "TRADEWIND_STATE_STORE_MAX_VALUE_BYTES (100 bytes)" in log_text(ctx)
    assert ask(ctx, p.GetStateValue(key="big")) == p.StateValueResult(found=True, value=value)


def test_a_value_at_the_warning_size_gives_no_warning(ctx: TryContext) -> None:
    ctx = replace(ctx, max_value_bytes=12)

    ask(ctx, p.SetStateValue(key="k", value="x" * 10))

    assert "warning" not in log_text(ctx)


def test_a_value_over_what_the_database_takes_is_refused_before_any_sql(
    ctx: TryContext, counter: StatementCounter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(values.DATABASE_MAX_VALUE_BYTES, "sqlite", 50)

    reply = ask(ctx, p.SetStateValue(key="huge", value="x" * 60))

    assert isinstance(reply, p.ErrorResponse)
    assert reply.error == (
        "ValueTooLarge: state value 'huge' is 62 bytes, over the 50 bytes the database accepts: "
        "configure TRADEWIND_STATE_STORE_BACKEND=object_storage for values this large"
    )
    assert counter.statements == []


def test_a_checkpoint_batch_gets_the_same_size_checks(
    ctx: TryContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(values.DATABASE_MAX_VALUE_BYTES, "sqlite", 50)

    reply = ask(ctx, p.WriteCheckpointBatch(number=0, value=["x" * 60]))

    assert isinstance(reply, p.ErrorResponse)
    assert "'_iterable_batch_0' is 64 bytes" in reply.error


@pytest.mark.parametrize(
    ("value", "error"),
    [(None, "is None: use delete()"), (float("nan"), "Out of range float values")],
)
def test_none_and_nan_are_refused(ctx: TryContext, value: object, error: str) -> None:
    reply = ask(ctx, p.SetStateValue(key="k", value=value))

    assert isinstance(reply, p.ErrorResponse)
    assert error in reply.error


def test_a_users_clear_keeps_the_checkpoints(ctx: TryContext) -> None:
    ask(ctx, p.SetStateValue(key="mine", value=1))
    ask(ctx, p.WriteCheckpointBatch(number=0, value={"outcomes": []}))
    ask(ctx, p.WriteCheckpointMarker(value={"total": 0}))

    ask(ctx, p.ClearStateValues())

    assert ask(ctx, p.GetStateValue(key="mine")) == p.StateValueResult(found=False)
    reply = ask(ctx, p.ReadCheckpointBatches())
    assert reply == p.CheckpointBatchesResult(batches={0: {"outcomes": []}}, marker={"total": 0})


def test_an_items_clear_deletes_only_its_own_keys(ctx: TryContext) -> None:
    for key in ("cursor#1.aa", "cursor#2.bb", "cursor", "seen#1.aa"):
        ask(ctx, p.SetStateValue(key=key, value=1))

    ask(ctx, p.ClearStateValues(key_suffix="#1.aa"))

    with session_scope(ctx.url) as session:
        keys = sorted(session.scalars(select(TaskStateValue.key)))
    assert keys == ["cursor", "cursor#2.bb"]


def test_every_batch_is_read_in_one_query(ctx: TryContext, counter: StatementCounter) -> None:
    for number in range(40):
        ask(ctx, p.WriteCheckpointBatch(number=number, value={"n": number}))
    ask(ctx, p.SetStateValue(key="_not_a_checkpoint", value=1))
    counter.statements.clear()

    reply = ask(ctx, p.ReadCheckpointBatches())

    assert isinstance(reply, p.CheckpointBatchesResult)
    assert reply.batches == {n: {"n": n} for n in range(40)}
    assert reply.marker is None
    assert len(counter.statements) == 1


def test_clearing_the_batches_keeps_the_marker_and_the_users_keys(ctx: TryContext) -> None:
    ask(ctx, p.SetStateValue(key="mine", value=1))
    ask(ctx, p.WriteCheckpointBatch(number=0, value={}))
    ask(ctx, p.WriteCheckpointBatch(number=1, value={}))
    ask(ctx, p.WriteCheckpointMarker(value={"done": 2}))

    ask(ctx, p.ClearCheckpointBatches())

    with session_scope(ctx.url) as session:
        keys = sorted(session.scalars(select(TaskStateValue.key)))
    assert keys == ["_iterable_complete", "mine"]


def test_items_total_is_recorded_on_the_task_instance(ctx: TryContext) -> None:
    ask(ctx, p.SetItemsTotal(total=5000))

    with session_scope(ctx.url) as session:
        ti = session.get(TaskInstance, ctx.fence.ti_id)
        assert ti is not None
        assert ti.items_total == 5000


def test_a_write_of_a_try_that_lost_its_task_instance_is_refused(ctx: TryContext) -> None:
    with session_scope(ctx.url) as session:
        run = session.scalars(select(DagRun)).one()
        clear_task_instances(session, run)

    reply = ask(ctx, p.WriteCheckpointBatch(number=0, value={}))

    assert isinstance(reply, p.ErrorResponse)
    assert ctx.lost
    assert ask(ctx, p.ReadCheckpointBatches()) == p.CheckpointBatchesResult()


def _state_keys(url: str) -> list[str]:
    with session_scope(url) as session:
        return sorted(session.scalars(select(TaskStateValue.key)))


@pytest.mark.parametrize(("keep_state", "left"), [(False, []), (True, ["mine"])])
def test_a_clear_discards_the_state_unless_asked_to_keep_it(
    ctx: TryContext, keep_state: bool, left: list[str]
) -> None:
    ask(ctx, p.SetStateValue(key="mine", value=json.dumps({"x": 1})))

    with session_scope(ctx.url) as session:
        run = session.scalars(select(DagRun)).one()
        clear_task_instances(session, run, keep_state=keep_state)

    assert _state_keys(ctx.url) == left
