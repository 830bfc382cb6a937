"""Asset watchers in the store: their triggers' rows, and the asset events their triggers fire.

A DAG scheduled on an asset that has ``AssetWatcher``s stores them in its structure
(``asset_watchers``); its sync keeps one ``trigger`` row per watcher, keyed by the asset's URI and
the watcher's name (``watcher``), which any triggerer claims like a deferred try's. Each event
the trigger yields is recorded as an event of the asset, with ``{"from_trigger": true,
"payload": ...}`` as its extra, and queues the asset for the DAGs scheduled on it, as a task's
outlet does: the scheduler creates their runs from that queue.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from state.core import TRIGGER_TABLE
from state.records import EventSource, OutletEvent, record_events

_TRIGGER = TRIGGER_TABLE
_SEPARATOR = " "  # a URI holds no space


def watcher_key(uri: str, name: str) -> str:
    return f"{uri}{_SEPARATOR}{name}"


def sync_watchers(session: Session, watchers: Iterable[Mapping[str, Any]]) -> None:
    """Keep a trigger row per watcher; a watcher whose trigger changed is restarted."""
    for watcher in watchers:
        key = watcher_key(str(watcher["uri"]), str(watcher["name"]))
        stored = session.execute(
            select(_TRIGGER.c.id, _TRIGGER.c.classpath, _TRIGGER.c.kwargs).where(
                _TRIGGER.c.watcher == key
            )
        ).first()
        if stored is None:
            session.execute(
                _TRIGGER.insert().values(
                    classpath=watcher["classpath"],
                    kwargs=watcher["kwargs"],
                    watcher=key,
                    created_at=dt.datetime.now(dt.UTC),
                )
            )
        elif (stored.classpath, stored.kwargs) != (watcher["classpath"], watcher["kwargs"]):
            session.execute(
                update(_TRIGGER)
                .where(_TRIGGER.c.id == stored.id)
                .values(
                    classpath=watcher["classpath"],
                    kwargs=watcher["kwargs"],
                    claim_token=None,
                    triggerer_id=None,
                )
            )


def record_watcher_event(session: Session, key: str, payload: Any, at: dt.datetime) -> None:
    """An event of the watcher ``key``'s asset, queued for the DAGs scheduled on it."""
    uri, _, name = key.partition(_SEPARATOR)
    event = OutletEvent(uri, extra={"from_trigger": True, "payload": payload, "watcher": name})
    record_events(session, EventSource(None, None, None), [event], at)
