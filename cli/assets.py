"""``tradewind assets list`` / ``tradewind assets events``: the assets and their events."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from cli.common import settings_or_exit
from cli.store import open_store, sync_folder
from state.core import session_scope
from state.records import EventView, list_assets, list_events

app = typer.Typer(help="List assets and their events.", no_args_is_help=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


@app.command("list")
def list_command(as_json: JsonFlag = False) -> None:
    """Every asset: how many events it has, the last one, and the DAGs scheduled on it."""
    settings = settings_or_exit()
    url = open_store(settings)
    sync_folder(settings, url)
    with session_scope(url) as session:
        assets = list_assets(session)
    records: list[dict[str, Any]] = [
        {
            "uri": a.uri,
            "name": a.name,
            "group": a.group,
            "events": a.events,
            "last_event_at": a.last_event_at.isoformat() if a.last_event_at else None,
            "consumers": list(a.consumers),
        }
        for a in assets
    ]
    if as_json:
        typer.echo(json.dumps(records, indent=2))
        return
    for r in records:
        consumers = ", ".join(r["consumers"]) or "-"
        typer.echo(
            f"{r['uri']}  events={r['events']}  last={r['last_event_at']}  scheduled: {consumers}"
        )


@app.command("events")
def events_command(
    uri: Annotated[str | None, typer.Argument(help="Only this asset's events.")] = None,
    dag_id: Annotated[str | None, typer.Option("--dag-id", help="Only events of this DAG.")] = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Only events of this run.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.")] = 100,
    as_json: JsonFlag = False,
) -> None:
    """Asset events, newest first: asset, extra, the try that made it."""
    url = open_store(settings_or_exit())
    with session_scope(url) as session:
        events = list_events(session, uri, source_dag_id=dag_id, source_run_id=run_id, limit=limit)
    records = [event_record(event) for event in events]
    if as_json:
        typer.echo(json.dumps(records, indent=2))
        return
    for r in records:
        source = f"{r['source_dag_id']}/{r['source_run_id']}/{r['source_task_id']}"
        via = f" via {r['source_alias']}" if r["source_alias"] else ""
        typer.echo(f"{r['timestamp']}  {r['uri']}{via}  {json.dumps(r['extra'])}  from {source}")


def event_record(event: EventView) -> dict[str, Any]:
    """One event, JSON-ready."""
    return {
        "id": event.id,
        "uri": event.uri,
        "extra": dict(event.extra),
        "source_dag_id": event.source_dag_id,
        "source_run_id": event.source_run_id,
        "source_task_id": event.source_task_id,
        "source_map_index": event.source_map_index,
        "source_alias": event.source_alias,
        "partition_key": event.partition_key,
        "timestamp": event.timestamp.isoformat(),
    }
