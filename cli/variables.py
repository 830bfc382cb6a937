"""``tradewind variables set/get/list/delete``: named values every task can read.

Register on the top-level app: ``app.add_typer(variables.app, name="variables")``. A variable set
with ``--secret``, or named like a secret (``password``, ``token``...), is masked in task logs
and never printed here. ``set --secret`` without a value reads it from stdin (prompted, unechoed,
at a terminal): a value on the command line is seen by ``ps`` and kept in the shell's history.
"""

from __future__ import annotations

import getpass
import json
import sys
from typing import Annotated

import typer

from cli.common import EXIT_BAD_INPUT, fail, settings_or_exit
from cli.store import open_store
from state.core import session_scope
from state.records import (
    Actor,
    delete_variable,
    get_variable,
    list_variables,
    record_event,
    set_variable,
)
from tradewind.connections import is_sensitive
from worker.supervisor.logs import MASK

app = typer.Typer(help="Set, get, list and delete variables.", no_args_is_help=True)

Key = Annotated[str, typer.Argument(help="The variable's key.")]


@app.command("set")
def set_value(
    key: Key,
    value: Annotated[
        str | None,
        typer.Argument(
            help="The value (a string; JSON if you use --json). With --secret, leave it out "
            "to read it from stdin."
        ),
    ] = None,
    secret: Annotated[
        bool, typer.Option("--secret", help="Mask it in logs; never print it.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Check that the value is JSON.")] = False,
) -> None:
    """Create or replace a variable (tasks read it with ``Variable.get(key)``)."""
    if value is None:
        if not secret:
            fail("give the VALUE (or --secret to read it from stdin)", EXIT_BAD_INPUT)
        value = read_secret(f"value of {key}: ")
    if as_json:
        try:
            json.loads(value)
        except json.JSONDecodeError as error:
            fail(f"the value is not valid JSON: {error}", EXIT_BAD_INPUT)
    url = open_store(settings_or_exit())
    with session_scope(url) as session:
        event = "post_variable" if get_variable(session, key) is None else "patch_variable"
        set_variable(session, key, value, secret)
        record_event(session, Actor.cli(), event, extra={"key": key})  # never its value
    kind = "secret variable" if secret or is_sensitive(key) else "variable"
    typer.echo(f"{kind} {key} set")


def read_secret(prompt: str) -> str:
    """A secret from stdin: prompted and not echoed at a terminal, else read whole (a PEM key's
    lines and all), less one final newline."""
    if sys.stdin.isatty():
        return getpass.getpass(prompt)
    text = sys.stdin.read()
    return text[:-1] if text.endswith("\n") else text


@app.command("get")
def get(key: Key) -> None:
    """Print a variable's value (a secret one is not printed)."""
    url = open_store(settings_or_exit())
    with session_scope(url) as session:
        row = get_variable(session, key)
        if row is None:
            fail(f"no variable {key!r}")
        value, secret = row.value, row.is_secret or is_sensitive(key)
    if secret:
        fail(f"variable {key!r} is secret: its value is never printed (tasks read it)")
    typer.echo(value)


@app.command("list")
def list_all(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of lines.")] = False,
) -> None:
    """Every variable; secret values show as ``***``."""
    url = open_store(settings_or_exit())
    with session_scope(url) as session:
        records = [
            {"key": row.key, "value": MASK if row.is_secret or is_sensitive(row.key) else row.value}
            for row in list_variables(session)
        ]
    if as_json:
        typer.echo(json.dumps(records, indent=2))
        return
    for record in records:
        typer.echo(f"{record['key']}={record['value']}")


@app.command("delete")
def delete(key: Key) -> None:
    """Delete a variable."""
    url = open_store(settings_or_exit())
    with session_scope(url) as session:
        if not delete_variable(session, key):
            fail(f"no variable {key!r}")
        record_event(session, Actor.cli(), "delete_variable", extra={"key": key})
    typer.echo(f"variable {key} deleted")
