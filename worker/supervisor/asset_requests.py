"""The supervisor's handlers of a task's asset requests: events to read, the asset state store.

Values of the asset state store are JSON in the row (no object storage: a watermark is small).
"""

from __future__ import annotations

import json

from state.core import session_scope
from state.records import (
    asset_events_for_task,
    delete_asset_state,
    read_asset_state,
    write_asset_state,
)
from worker import wire as p
from worker.supervisor.request_table import handles
from worker.supervisor.try_context import TryContext


@handles
def get_asset_events(ctx: TryContext, request: p.GetAssetEvents) -> p.Message:
    with session_scope(ctx.url) as session:
        events = asset_events_for_task(session, request.uri)
    return p.AssetEventsResult(events=events)


@handles
def get_asset_state_value(ctx: TryContext, request: p.GetAssetStateValue) -> p.Message:
    with session_scope(ctx.url) as session:
        text = read_asset_state(session, request.uri, request.key)
    if text is None:
        return p.StateValueResult(found=False)
    return p.StateValueResult(found=True, value=json.loads(text))


@handles
def set_asset_state_value(ctx: TryContext, request: p.SetAssetStateValue) -> p.Message:
    text = json.dumps(request.value)  # a value JSON cannot hold fails here, before any write
    with session_scope(ctx.url) as session:
        write_asset_state(session, ctx.fence, request.uri, request.key, text)
    return p.OKResponse()


@handles
def delete_asset_state_value(ctx: TryContext, request: p.DeleteAssetStateValue) -> p.Message:
    with session_scope(ctx.url) as session:
        delete_asset_state(session, ctx.fence, request.uri, request.key)
    return p.OKResponse()
