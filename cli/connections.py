"""``tradewind connections add/list/delete``: what tasks and XCom backends look up by id.

Register on the top-level app: ``app.add_typer(connections.app, name="connections")``. A
password is never printed: ``list`` shows ``***`` where one is set, and the extra's keys only
(an extra often holds tokens too).
"""

from __future__ import annotations

import getpass
import json
import sys
from typing import Annotated, Any

import typer

from cli.common import EXIT_BAD_INPUT, fail, settings_or_exit
from cli.store import open_store
from state.core import session_scope
from state.records import (
    Actor,
    delete_connection,
    get_connection,
    list_connections,
    put_connection,
    record_event,
)
from tradewind.connections import Connection
from worker.supervisor.logs import MASK

app = typer.Typer(help="Add, list and delete connections.", no_args_is_help=True)

ConnId = Annotated[str, typer.Argument(help="The connection's id.")]
Text = str | None


def _extra(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        extra = json.loads(text)
    except json.JSONDecodeError as error:
        fail(f"--extra is not valid JSON: {error}", EXIT_BAD_INPUT)
    if not isinstance(extra, dict):
        fail("--extra must be a JSON object", EXIT_BAD_INPUT)
    return extra


def _from_options(conn_id: str, uri: Text, fields: dict[str, Any]) -> Connection:
    if uri is None:
        return Connection(conn_id, **{k: v for k, v in fields.items() if v is not None})
    if any(value for name, value in fields.items() if name != "conn_type"):
        fail("give either --uri or the separate fields, not both", EXIT_BAD_INPUT)
    try:
        return Connection.from_uri(conn_id, uri)
    except ValueError as error:  # a URI with no scheme, or a port that is not a number
        fail(f"--uri: {error}", EXIT_BAD_INPUT)


@app.command("add")
def add(
    conn_id: ConnId,
    uri: Annotated[
        Text, typer.Option(help="All of it as type://login:password@host:port/schema?k=v")
    ] = None,
    conn_type: Annotated[
        str, typer.Option("--conn-type", help="e.g. postgres, aws, http")
    ] = "generic",
    host: Annotated[Text, typer.Option()] = None,
    login: Annotated[Text, typer.Option()] = None,
    password: Annotated[
        Text, typer.Option(help="Prefer --password-stdin: argv is visible to ps.")
    ] = None,
    password_stdin: Annotated[
        bool,
        typer.Option(
            "--password-stdin", help="Read the password from stdin (prompted at a terminal)."
        ),
    ] = False,
    schema: Annotated[Text, typer.Option()] = None,
    port: Annotated[int | None, typer.Option()] = None,
    extra: Annotated[Text, typer.Option(help="A JSON object, e.g. an S3 endpoint_url.")] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Overwrite an existing connection.")
    ] = False,
) -> None:
    """Add a connection (tasks read it with ``Connection.get(conn_id)``)."""
    if password_stdin:
        password = (
            getpass.getpass("password: ")
            if sys.stdin.isatty()
            else sys.stdin.readline().rstrip("\n")
        )
    fields = {
        "conn_type": conn_type,
        "host": host,
        "login": login,
        "password": password,
        "schema": schema,
        "port": port,
        "extra": _extra(extra) or None,
    }
    connection = _from_options(conn_id, uri, fields)
    url = open_store(settings_or_exit())
    with session_scope(url) as session:
        existed = get_connection(session, conn_id) is not None
        if existed and not replace:
            fail(f"connection {conn_id!r} already exists (use --replace to overwrite it)")
        put_connection(
            session,
            conn_id,
            conn_type=connection.conn_type,
            host=connection.host,
            login=connection.login,
            password=connection.password,
            schema=connection.schema,
            port=connection.port,
            extra=connection.extra,
        )
        event = "patch_connection" if existed else "post_connection"
        named = {"connection_id": conn_id, "conn_type": connection.conn_type}  # no secret
        record_event(session, Actor.cli(), event, extra=named)
    typer.echo(f"connection {conn_id} ({connection.conn_type}) saved")


def _record(row: Any) -> dict[str, Any]:
    return {
        "conn_id": row.conn_id,
        "conn_type": row.conn_type,
        "host": row.host,
        "port": row.port,
        "login": row.login,
        "password": MASK if row.password else None,
        "schema": row.schema,
        "extra_keys": sorted(row.extra or {}),
    }


@app.command("list")
def list_all(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Every connection; passwords show as ``***``."""
    url = open_store(settings_or_exit())
    with session_scope(url) as session:
        records = [_record(row) for row in list_connections(session)]
    if as_json:
        typer.echo(json.dumps(records, indent=2))
        return
    columns = ("conn_id", "conn_type", "host", "port", "login", "password", "schema", "extra_keys")
    table = [[_cell(record[name]) for name in columns] for record in records]
    widths = [max(len(name), *(len(row[i]) for row in table)) for i, name in enumerate(columns)]
    typer.echo("  ".join(n.ljust(w) for n, w in zip(columns, widths, strict=True)).rstrip())
    for row in table:
        typer.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return ",".join(value) if isinstance(value, list) else str(value)


@app.command("delete")
def delete(conn_id: ConnId) -> None:
    """Delete a connection."""
    url = open_store(settings_or_exit())
    with session_scope(url) as session:
        if not delete_connection(session, conn_id):
            fail(f"no connection {conn_id!r}")
        extra = {"connection_id": conn_id}
        record_event(session, Actor.cli(), "delete_connection", extra=extra)
    typer.echo(f"connection {conn_id} deleted")
