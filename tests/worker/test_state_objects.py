"""The state store on object storage: the backend on its own (``file://`` and a real S3 API), then
the supervisor's handlers with it, run in process against SQLite.

The handlers' object calls go to ``InProcessCalls`` here (the helper process is exercised by the
task runs of ``test_state_objects_tasks.py``); replies that wait on a call come through
``ctx.send``, as in the supervisor loop.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from state.core.db import session_scope
from state.core.models import DagRun, TaskStateValue
from state.core.objects import STATE_OBJECT_KEY
from state.engine.runs import clear_task_instances
from state.records import values
from state.records.values import purge_expired_states
from tests.worker.xcom_support import Moto
from tradewind.connections import Connection
from tradewind.settings import Settings, SettingsError, reload_settings
from worker import wire as p
from worker.state_store.object_storage import ObjectStorageStateBackend
from worker.state_store.purge import state_purger
from worker.supervisor.execute import task_details
from worker.supervisor.logs import TryLog
from worker.supervisor.requests import handle
from worker.supervisor.try_context import TryContext
from worker.xcom.base import XComAddress, XComBackendError
from worker.xcom.calls import InProcessCalls
from worker.xcom.try_xcoms import TryXComs

from .iterable_support import Stack
from .test_state_store_requests import DAG, StatementCounter

RUN_ID = "manual__2024-01-01T00:00:00+00:00"
LARGE = {"rows": ["x" * 30] * 10}  # 340 bytes of JSON
THRESHOLD = 100


def where(key: str = "k", map_index: int = -1) -> XComAddress:
    return XComAddress("d", RUN_ID, "t", map_index, key)


def path_of(backend: ObjectStorageStateBackend, row: Any) -> str:
    return str(backend.fs._strip_protocol(row[STATE_OBJECT_KEY]))


def exists(backend: ObjectStorageStateBackend, row: Any) -> bool:
    return bool(backend.fs.exists(path_of(backend, row)))


class FakeLookups:
    def __init__(self, connections: dict[str, Connection]) -> None:
        self.connections = connections

    def get_connection(self, conn_id: str) -> Connection:
        return self.connections[conn_id]

    def get_variable(self, key: str) -> str | None:
        return None


def s3_settings(moto: Moto, bucket: str) -> tuple[Settings, FakeLookups]:
    connection = Connection(
        "store", "aws", login="testing", password="testing", extra={"endpoint_url": moto.endpoint}
    )
    settings = Settings(
        state_store_backend="object_storage",
        object_storage_url=f"s3://{bucket}/tw",
        object_storage_conn_id="store",
    )
    return settings, FakeLookups({"store": connection})


@pytest.fixture(params=["file", "s3"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStorageStateBackend:
    """The backend as the helper builds it, from the settings (and, for S3, a Connection)."""
    if request.param == "file":
        settings = Settings(
            state_store_backend="object_storage", object_storage_url=f"file://{tmp_path}/objects"
        )
        made = ObjectStorageStateBackend.from_settings(settings, FakeLookups({}))
    else:
        moto: Moto = request.getfixturevalue("moto")
        made = ObjectStorageStateBackend.from_settings(*s3_settings(moto, moto.new_bucket()))
    assert isinstance(made, ObjectStorageStateBackend)
    return made


# --- the backend ------------------------------------------------------------------------------


def test_every_value_goes_to_a_deterministic_path_under_state(
    backend: ObjectStorageStateBackend,
) -> None:
    row = backend.store(where("cursor/a", map_index=3), {"n": 1})

    base = backend.url.removesuffix("/state")
    assert row == {STATE_OBJECT_KEY: f"{base}/state/d/{RUN_ID}/t/3/cursor%2Fa", "bytes": 7}
    assert backend.load(where("cursor/a", map_index=3), json.loads(json.dumps(row))) == {"n": 1}
    # The same key again: the same object, overwritten.
    assert backend.store(where("cursor/a", map_index=3), [2]) == {**row, "bytes": 3}
    assert backend.load(where("cursor/a", map_index=3), row) == [2]


def test_the_s3_object_is_written_with_the_connections_credentials(moto: Moto) -> None:
    bucket = moto.new_bucket()
    made = ObjectStorageStateBackend.from_settings(*s3_settings(moto, bucket))

    made.store(where(), LARGE)

    listed = moto.client().list_objects_v2(Bucket=bucket)["Contents"]
    assert [o["Key"] for o in listed] == [f"tw/state/d/{RUN_ID}/t/-1/k"]


def test_a_missing_object_is_an_error_naming_the_value_and_its_url(
    backend: ObjectStorageStateBackend,
) -> None:
    row = backend.store(where(), LARGE)
    backend.purge(where(), row)
    backend.purge(where(), row)  # twice is harmless

    with pytest.raises(XComBackendError) as caught:
        backend.load(where(), row)
    assert str(caught.value) == (
        f"the object of state value 'k' of d/{RUN_ID}/t is missing: {row[STATE_OBJECT_KEY]}"
    )


def test_the_settings_name_the_variable_when_the_url_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TRADEWIND_OBJECT_STORAGE_URL", raising=False)
    monkeypatch.setenv("TRADEWIND_STATE_STORE_BACKEND", "object_storage")
    with pytest.raises(SettingsError) as caught:
        reload_settings()
    assert str(caught.value) == (
        "TRADEWIND_STATE_STORE_BACKEND=object_storage needs TRADEWIND_OBJECT_STORAGE_URL "
        "(an fsspec URL such as s3://bucket/prefix or file:///path)"
    )
    monkeypatch.setenv("TRADEWIND_STATE_STORE_BACKEND", "s3")
    with pytest.raises(SettingsError) as caught:
        reload_settings()
    assert str(caught.value) == (
        "TRADEWIND_STATE_STORE_BACKEND: Input should be 'sql' or 'object_storage' (got 's3')"
    )
    monkeypatch.undo()
    reload_settings()


# --- the supervisor's handlers ----------------------------------------------------------------


@pytest.fixture
def objects(tmp_path: Path) -> ObjectStorageStateBackend:
    return ObjectStorageStateBackend(f"file://{tmp_path}/objects/state", 0)


@pytest.fixture
def ctx(tmp_path: Path, objects: ObjectStorageStateBackend) -> Iterator[TryContext]:
    stack = Stack(tmp_path)
    stack.add_dag("store_dag", DAG)
    (enqueue,) = stack.schedule(stack.trigger("store_dag"))
    claim = stack.claim(enqueue)
    log = TryLog(tmp_path / "try.log")
    xcoms = TryXComs(state_calls=InProcessCalls(objects))
    yield TryContext(stack.url, claim.fence, claim.ti, task_details(claim), log, THRESHOLD, xcoms)
    log.close()


def ask(ctx: TryContext, request: p.Message) -> p.Message:
    """The reply, whether the handler gave it at once or sent it once its object calls ran."""
    reply = handle(ctx, request)
    if reply is None:
        (reply,) = ctx.take_replies()
    return reply


def with_state_calls(ctx: TryContext, calls: InProcessCalls | None) -> TryContext:
    """The same try, with its state objects served by ``calls`` (None: the SQL backend)."""
    return replace(ctx, xcoms=replace(ctx.xcoms, state_calls=calls))


def stored(ctx: TryContext) -> dict[str, Any]:
    with session_scope(ctx.url) as session:
        rows = session.execute(select(TaskStateValue.key, TaskStateValue.value))
        return {row.key: json.loads(row.value) for row in rows}


def object_file(tmp_path: Path, key: str) -> Path:
    return tmp_path / "objects" / "state" / "store_dag" / "r1" / "only" / "-1" / key


def test_a_large_value_goes_to_its_object_and_a_small_one_stays_in_its_row(
    ctx: TryContext, tmp_path: Path
) -> None:
    assert ask(ctx, p.SetStateValue(key="big", value=LARGE)) == p.OKResponse()
    assert ask(ctx, p.SetStateValue(key="small", value=[1])) == p.OKResponse()

    path = object_file(tmp_path, "big")
    assert stored(ctx) == {"big": {STATE_OBJECT_KEY: f"file://{path}", "bytes": 340}, "small": [1]}
    assert json.loads(path.read_text()) == LARGE
    assert ask(ctx, p.GetStateValue(key="big")) == p.StateValueResult(found=True, value=LARGE)
    assert ask(ctx, p.GetStateValue(key="small")) == p.StateValueResult(found=True, value=[1])
    assert "warning" not in ctx.log.path.read_text()


def test_a_value_over_what_the_database_takes_goes_to_storage(
    ctx: TryContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(values.DATABASE_MAX_VALUE_BYTES, "sqlite", 50)
    ctx = replace(ctx, max_value_bytes=1 << 20)

    assert ask(ctx, p.SetStateValue(key="huge", value="x" * 60)) == p.OKResponse()

    assert STATE_OBJECT_KEY in stored(ctx)["huge"]
    assert object_file(tmp_path, "huge").read_text() == json.dumps("x" * 60)


def test_a_missing_object_fails_the_get_with_its_url(ctx: TryContext, tmp_path: Path) -> None:
    ask(ctx, p.SetStateValue(key="big", value=LARGE))
    object_file(tmp_path, "big").unlink()

    reply = ask(ctx, p.GetStateValue(key="big"))

    assert reply == p.ErrorResponse(
        error="XComBackendError: the object of state value 'big' of store_dag/r1/only is "
        f"missing: file://{object_file(tmp_path, 'big')}"
    )


def test_delete_and_clears_delete_the_objects_of_the_rows_they_delete(
    ctx: TryContext, tmp_path: Path
) -> None:
    for key in ("gone", "mine"):
        ask(ctx, p.SetStateValue(key=key, value=LARGE))
    ask(ctx, p.WriteCheckpointBatch(number=0, value=LARGE))
    files = {key: object_file(tmp_path, key) for key in ("gone", "mine", "_iterable_batch_0")}

    assert ask(ctx, p.DeleteStateValue(key="gone")) == p.OKResponse()
    assert [key for key, path in files.items() if path.exists()] == ["mine", "_iterable_batch_0"]
    assert ask(ctx, p.ClearStateValues()) == p.OKResponse()  # a user's clear: not checkpoints
    assert [key for key, path in files.items() if path.exists()] == ["_iterable_batch_0"]
    assert ask(ctx, p.ClearCheckpointBatches()) == p.OKResponse()
    assert not any(path.exists() for path in files.values())
    assert stored(ctx) == {}


def test_a_value_the_store_cannot_take_fails_the_set_and_writes_no_row(
    ctx: TryContext, tmp_path: Path
) -> None:
    (tmp_path / "a_file").write_text("")
    url = f"file://{tmp_path}/a_file/state"  # no folder can be made under a file
    ctx = with_state_calls(ctx, InProcessCalls(ObjectStorageStateBackend(url, 0)))

    reply = ask(ctx, p.SetStateValue(key="big", value=LARGE))

    assert isinstance(reply, p.ErrorResponse)
    assert reply.error.startswith(
        f"XComBackendError: could not store state value 'big' of store_dag/r1/only (340 bytes) "
        f"at {url}/store_dag/r1/only/-1/big: "
    )
    assert stored(ctx) == {}


class Unpurgeable(ObjectStorageStateBackend):
    def purge(self, where: XComAddress, row: Any) -> None:
        raise XComBackendError("the bucket refuses deletes")


def test_a_purge_that_fails_is_the_deletes_error_and_the_row_stays_deleted(
    ctx: TryContext, tmp_path: Path
) -> None:
    unpurgeable = Unpurgeable(f"file://{tmp_path}/objects/state", 0)
    ctx = with_state_calls(ctx, InProcessCalls(unpurgeable))
    ask(ctx, p.SetStateValue(key="big", value=LARGE))

    reply = ask(ctx, p.DeleteStateValue(key="big"))

    assert reply == p.ErrorResponse(
        error="the row is gone, but not its object: XComBackendError: the bucket refuses deletes"
    )
    assert stored(ctx) == {}
    assert object_file(tmp_path, "big").exists()  # left behind, never a row without its object


def test_a_value_kept_in_the_row_again_purges_the_old_object(
    ctx: TryContext, tmp_path: Path
) -> None:
    ask(ctx, p.SetStateValue(key="k", value=LARGE))
    ask(ctx, p.SetStateValue(key="k", value={**LARGE, "more": 1}))  # the same object, rewritten
    assert object_file(tmp_path, "k").exists()

    assert ask(ctx, p.SetStateValue(key="k", value=1)) == p.OKResponse()

    assert not object_file(tmp_path, "k").exists()
    assert ask(ctx, p.GetStateValue(key="k")) == p.StateValueResult(found=True, value=1)


def test_checkpoints_in_objects_are_read_back_after_one_query(ctx: TryContext) -> None:
    batches = {0: LARGE, 1: {"small": 1}, 2: {**LARGE, "n": 2}}
    for number, value in batches.items():
        ask(ctx, p.WriteCheckpointBatch(number=number, value=value))
    ask(ctx, p.WriteCheckpointMarker(value={"done": 3, "pad": "p" * 200}))
    assert [STATE_OBJECT_KEY in row for row in stored(ctx).values()] == [True, False, True, True]
    counter = StatementCounter(ctx.url)

    reply = ask(ctx, p.ReadCheckpointBatches())

    counter.close()
    assert reply == p.CheckpointBatchesResult(batches=batches, marker={"done": 3, "pad": "p" * 200})
    assert len(counter.statements) == 1


def test_a_try_that_lost_its_task_instance_writes_no_object(
    ctx: TryContext, tmp_path: Path
) -> None:
    with session_scope(ctx.url) as session:
        clear_task_instances(session, session.scalars(select(DagRun)).one())

    reply = ask(ctx, p.SetStateValue(key="big", value=LARGE))

    assert isinstance(reply, p.ErrorResponse)
    assert ctx.lost
    assert not object_file(tmp_path, "big").exists()


def test_housekeeping_leaves_an_expired_value_in_storage_and_its_row(
    ctx: TryContext, tmp_path: Path
) -> None:
    past = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
    ask(ctx, p.SetStateValue(key="big", value=LARGE, expires_at=past))
    ask(ctx, p.SetStateValue(key="small", value=1, expires_at=past))

    assert ask(ctx, p.GetStateValue(key="big")) == p.StateValueResult(found=False)
    with session_scope(ctx.url) as session:
        assert purge_expired_states(session) == 1
    assert list(stored(ctx)) == ["big"]
    assert object_file(tmp_path, "big").exists()
    # The row is how a delete finds the object.
    ask(ctx, p.DeleteStateValue(key="big"))
    assert not object_file(tmp_path, "big").exists()


@pytest.mark.parametrize(("keep_state", "kept"), [(False, False), (True, True)])
def test_tasks_clear_purges_the_objects_unless_the_state_is_kept(
    ctx: TryContext, tmp_path: Path, keep_state: bool, kept: bool
) -> None:
    ask(ctx, p.SetStateValue(key="big", value=LARGE))
    ask(ctx, p.SetStateValue(key="small", value=1))
    settings = Settings(
        state_store_backend="object_storage", object_storage_url=f"file://{tmp_path}/objects"
    )
    purge = state_purger(settings)

    with session_scope(ctx.url) as session:
        run = session.scalars(select(DagRun)).one()
        clear_task_instances(session, run, keep_state=keep_state, purge_states=purge)

    assert object_file(tmp_path, "big").exists() is kept
    assert bool(stored(ctx)) is kept
    assert state_purger(Settings()) is None


def test_with_the_sql_backend_a_reference_is_never_returned_as_the_value(
    ctx: TryContext,
) -> None:
    ask(ctx, p.SetStateValue(key="big", value=LARGE))
    reference = stored(ctx)["big"]
    ctx = with_state_calls(ctx, None)  # the backend was switched back to sql

    reply = ask(ctx, p.GetStateValue(key="big"))

    assert reply == p.ErrorResponse(
        error=f"ValueError: state value 'big' is in object storage ({reference[STATE_OBJECT_KEY]})"
        ": reading it needs TRADEWIND_STATE_STORE_BACKEND=object_storage"
    )
    reply = ask(ctx, p.SetStateValue(key="fake", value=reference))
    assert reply == p.ErrorResponse(
        error="ValueError: state value 'fake' has the shape of a reference to an object"
    )


def test_a_value_shaped_like_a_reference_goes_to_storage_and_reads_back_as_given(
    ctx: TryContext,
) -> None:
    sneaky = {STATE_OBJECT_KEY: "file:///etc/passwd"}

    ask(ctx, p.SetStateValue(key="k", value=sneaky))

    assert stored(ctx)["k"][STATE_OBJECT_KEY] != sneaky[STATE_OBJECT_KEY]
    assert ask(ctx, p.GetStateValue(key="k")) == p.StateValueResult(found=True, value=sneaky)
