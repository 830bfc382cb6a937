"""How the supervisor serves the state store: a task's own keys and an iterable task's checkpoints.

The SQL row is always the index: a read is one query, whatever the number of keys (a retry's
read of every checkpoint included). With the SQL backend the value is the row, and a value over
what the database accepts is refused before any SQL is sent. With
``TRADEWIND_STATE_STORE_BACKEND=object_storage``, a value over
``TRADEWIND_STATE_STORE_MAX_VALUE_BYTES`` (or over the database's limit) is stored in object
storage and its row keeps the reference (``state/core/objects.py``); the rule for each case:

- the object I/O runs in the try's helper process, never here (docs/decisions/
  state-objects-in-the-helper.md); a handler that waits for it returns None and replies through
  ``ctx.reply_later``, the loop going on meanwhile;
- a write is fenced twice: before its object is stored (a try that lost its task instance must
  not overwrite the object of the one that has it), and when its row is written;
- a read loads the objects its rows refer to in one helper call, after its one query; a missing
  object is an error naming its URL, never the reference in place of the value;
- rows are deleted first (fenced), then their objects: a refused delete deletes no object, and
  a failed purge leaves an object no row leads to, never a row whose object is gone. A row whose
  value is replaced by one kept in the row has its old object purged the same way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

from sqlalchemy.orm import Session

from state.core import (
    STATE_OBJECT_KEY,
    assert_fence,
    count_metric,
    session_scope,
    statement_scope,
)
from state.records import checkpoints as cp
from state.records import database_max_value_bytes, object_reference, read_state, write_state
from state.records import delete_states as delete_state_rows
from state.views import PROGRESS_KEY, batch_progress
from worker import wire as p
from worker.supervisor.request_table import handles
from worker.supervisor.try_context import TryContext
from worker.xcom.base import XComAddress, XComBackendError
from worker.xcom.calls import BackendCalls, item, result_value

Write = Callable[[Session, str], None]
Reply = Callable[[dict[str, Any]], p.Message]
Operation = Literal["load_many", "purge", "store"]


class ValueTooLarge(ValueError):
    """A state value larger than the database accepts: refused before any SQL is sent."""


def _json_text(value: Any) -> str:
    return json.dumps(value, allow_nan=False, separators=(",", ":"))


def is_reference(row: Any) -> bool:
    """Whether a stored row refers to an object rather than holding the value."""
    return isinstance(row, dict) and isinstance(row.get(STATE_OBJECT_KEY), str)


def _checked_text(ctx: TryContext, key: str, value: Any) -> tuple[str, bool]:
    """The JSON text of a value, and whether it goes to object storage (sizes in UTF-8 bytes)."""
    if value is None:
        raise ValueError(f"state value for {key!r} is None: use delete() to remove a key")
    text = _json_text(value)
    size, limit = len(text.encode()), database_max_value_bytes(ctx.url)
    if ctx.xcoms.state_calls is not None:
        # A value shaped like a reference goes there too, so no row is ever ambiguous.
        return text, size > min(limit, ctx.max_value_bytes) or is_reference(value)
    if is_reference(value):
        raise ValueError(f"state value {key!r} has the shape of a reference to an object")
    if size > limit:
        raise ValueTooLarge(
            f"state value {key!r} is {size} bytes, over the {limit} bytes the database accepts: "
            "configure TRADEWIND_STATE_STORE_BACKEND=object_storage for values this large"
        )
    if size > ctx.max_value_bytes:
        ctx.log.line(
            "supervisor",
            f"warning: state value {key!r} is {size} bytes, over "
            f"TRADEWIND_STATE_STORE_MAX_VALUE_BYTES ({ctx.max_value_bytes} bytes); large values "
            "belong in object storage",
        )
    return text, False


def _call(ctx: TryContext, operation: Operation, rows: dict[str, Any]) -> p.XComBackendCall:
    ti = ctx.ti
    items = [
        item(XComAddress(ti.dag_id, ti.run_id, ti.task_id, ti.map_index, key), row)
        for key, row in rows.items()
    ]
    return p.XComBackendCall(operation=operation, items=items, backend="state")


def _objects(ctx: TryContext, rows: dict[str, Any]) -> BackendCalls:
    """Where object calls go; an error if the rows refer to objects the SQL backend cannot read."""
    if ctx.xcoms.state_calls is None:
        key, row = next(iter(rows.items()))
        raise ValueError(
            f"state value {key!r} is in object storage ({row[STATE_OBJECT_KEY]}): reading it "
            "needs TRADEWIND_STATE_STORE_BACKEND=object_storage"
        )
    return ctx.xcoms.state_calls


# --- reads ------------------------------------------------------------------------------------


def _load(ctx: TryContext, request: p.Message, rows: dict[str, Any], reply: Reply) -> None:
    """Reply with ``reply(values by key)`` once the objects ``rows`` refer to are loaded."""
    keys = list(rows)

    def loaded(result: p.XComBackendResult) -> None:
        ctx.reply_later(request, lambda: reply(dict(zip(keys, result_value(result), strict=True))))

    _objects(ctx, rows).call(_call(ctx, "load_many", rows), loaded)


@handles
def get_state_value(ctx: TryContext, request: p.GetStateValue) -> p.Message | None:
    with session_scope(ctx.url) as session:
        text = read_state(session, ctx.ti, request.key)
    if text is None:
        return p.StateValueResult(found=False)
    row = json.loads(text)
    if not is_reference(row):
        return p.StateValueResult(found=True, value=row)

    def found(values: dict[str, Any]) -> p.Message:
        return p.StateValueResult(found=True, value=values[request.key])

    _load(ctx, request, {request.key: row}, found)
    return None


@handles
def read_checkpoint_batches(ctx: TryContext, request: p.ReadCheckpointBatches) -> p.Message | None:
    """Every checkpoint in one query; the objects some refer to in one helper call after it."""
    with session_scope(ctx.url) as session:
        stored = cp.read_checkpoints(session, ctx.ti)
    numbers = {cp.batch_key(number): number for number in stored.batches}
    rows = {key: json.loads(stored.batches[number]) for key, number in numbers.items()}
    if stored.marker is not None:
        rows[cp.MARKER_KEY] = json.loads(stored.marker)

    def result(values: dict[str, Any]) -> p.Message:
        every = {**rows, **values}
        marker = every.pop(cp.MARKER_KEY, None)
        batches = {numbers[key]: value for key, value in every.items()}
        return p.CheckpointBatchesResult(batches=batches, marker=marker)

    referring = {key: row for key, row in rows.items() if is_reference(row)}
    if not referring:
        return result({})
    _load(ctx, request, referring, result)
    return None


# --- writes -----------------------------------------------------------------------------------


def _write(
    ctx: TryContext,
    request: p.Message,
    key: str,
    value: Any,
    write: Write,
    keep: dict[str, Any] | None = None,
    one_statement: bool = False,
) -> p.Message | None:
    """Write ``value`` under ``key`` with ``write`` (a fenced row write), large ones via storage.

    ``keep``: what the row of a value sent to storage keeps beside the reference.
    ``one_statement``: ``write`` is a single statement, which needs no transaction around it.
    """
    text, to_object = _checked_text(ctx, key, value)
    if not to_object:
        return _write_row(ctx, request, key, text, write, one_statement)
    with session_scope(ctx.url) as session:
        assert_fence(session, ctx.fence)

    def stored(result: p.XComBackendResult) -> None:
        def write_reference() -> p.Message | None:
            # Here, not in the callback itself: a store that failed becomes the reply's error.
            row_text = _json_text({**result_value(result), **(keep or {})})
            return _write_row(ctx, request, key, row_text, write)

        ctx.reply_later(request, write_reference)

    _objects(ctx, {key: value}).call(_call(ctx, "store", {key: value}), stored)
    return None


def _write_row(
    ctx: TryContext,
    request: p.Message,
    key: str,
    text: str,
    write: Write,
    one_statement: bool = False,
) -> p.Message | None:
    # A checkpoint write alone is one statement on PostgreSQL: in autocommit it spares the
    # BEGIN and COMMIT round trips, a third of a 16,194-item task's 1,013 writes.
    alone = one_statement and not ctx.xcoms.state_calls
    with (statement_scope if alone else session_scope)(ctx.url) as session:
        # One more indexed read per write, with object storage only: is an object replaced?
        old = object_reference(session, ctx.ti, key) if ctx.xcoms.state_calls else None
        write(session, text)
    if old is None or _same_object(old, text):
        return p.OKResponse()
    return _purge(ctx, request, {key: old})


def _same_object(old: str, new: str) -> bool:
    """Whether the new row refers to the old row's object: overwritten, so nothing to purge.

    A value now kept in the row would leave the old object behind, with no row leading to it.
    """
    row = json.loads(new)
    return is_reference(row) and bool(row[STATE_OBJECT_KEY] == json.loads(old)[STATE_OBJECT_KEY])


@handles
def set_state_value(ctx: TryContext, request: p.SetStateValue) -> p.Message | None:
    def write(session: Session, text: str) -> None:
        write_state(session, ctx.fence, ctx.ti, request.key, text, request.expires_at)

    return _write(ctx, request, request.key, request.value, write)


def _checkpoint(
    ctx: TryContext, request: p.Message, key: str, value: Any, keep: dict[str, Any] | None = None
) -> p.Message | None:
    def write(session: Session, text: str) -> None:
        cp.write_checkpoint(session, ctx.fence, ctx.ti, key, text)

    return _write(ctx, request, key, value, write, keep, one_statement=True)


@handles
def write_checkpoint_batch(ctx: TryContext, request: p.WriteCheckpointBatch) -> p.Message | None:
    # A batch in storage keeps its statuses in its row: progress reads rows, never objects.
    summary = batch_progress(request.value)
    keep = {PROGRESS_KEY: summary} if summary is not None else None
    reply = _checkpoint(ctx, request, cp.batch_key(request.number), request.value, keep)
    if summary is not None:
        _count_items(summary["outcomes"])
    return reply


#: The statuses ``iterable_items`` counts by; a task's other words count as "other" (a label's
#: values must stay few: each is a series every scrape reads).
_ITEM_STATUSES = frozenset({"success", "failed", "skipped"})


def _count_items(entries: list[dict[str, Any]]) -> None:
    counts: dict[str, int] = {}
    for entry in entries:
        status = entry["s"] if entry["s"] in _ITEM_STATUSES else "other"
        counts[status] = counts.get(status, 0) + 1
    for status, n in counts.items():
        count_metric("iterable_items", n, status=status)


@handles
def write_checkpoint_marker(ctx: TryContext, request: p.WriteCheckpointMarker) -> p.Message | None:
    return _checkpoint(ctx, request, cp.MARKER_KEY, request.value)


# --- deletes ----------------------------------------------------------------------------------


def _purge(ctx: TryContext, request: p.Message, rows: dict[str, str]) -> p.Message | None:
    """Reply OK once the objects of ``rows`` (deleted rows, as text) are purged, one call each.

    With the SQL backend there is nothing to purge them with: they are left (docs).
    """
    if not rows or ctx.xcoms.state_calls is None:
        return p.OKResponse()
    waiting, failures = len(rows), []

    def purged(result: p.XComBackendResult) -> None:
        nonlocal waiting
        waiting -= 1
        if result.error is not None:
            failures.append(result.error)
        if waiting == 0:
            ctx.reply_later(request, lambda: _purge_result(failures))

    for key, text in rows.items():
        ctx.xcoms.state_calls.call(_call(ctx, "purge", {key: json.loads(text)}), purged)
    return None


def _purge_result(failures: list[str]) -> p.Message:
    if failures:
        raise XComBackendError(f"the row is gone, but not its object: {failures[0]}")
    return p.OKResponse()


@handles
def delete_state_value(ctx: TryContext, request: p.DeleteStateValue) -> p.Message | None:
    with session_scope(ctx.url) as session:
        objects = delete_state_rows(session, ctx.fence, ctx.ti, [request.key])
    return _purge(ctx, request, objects)


@handles
def clear_state_values(ctx: TryContext, request: p.ClearStateValues) -> p.Message | None:
    with session_scope(ctx.url) as session:
        objects = cp.delete_user_states(session, ctx.fence, ctx.ti, request.key_suffix)
    return _purge(ctx, request, objects)


@handles
def clear_checkpoint_batches(
    ctx: TryContext, request: p.ClearCheckpointBatches
) -> p.Message | None:
    with session_scope(ctx.url) as session:
        objects = cp.delete_batches(session, ctx.fence, ctx.ti)
    return _purge(ctx, request, objects)
