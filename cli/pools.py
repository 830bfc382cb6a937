"""``tradewind pools set/list/delete``: named slot counts that tasks share (``@task(pool=...)``).

Register on the top-level app: ``app.add_typer(pools.app, name="pools")`` (cli/main.py).
A DAG naming a pool that does not exist is refused at sync with an import error: create the
pool first, then the DAG is picked up at the next sync.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from cli.common import EXIT_BAD_INPUT, fail, settings_or_exit
from cli.store import open_store
from state.core import session_scope
from state.engine import delete_pool, pool_usage, set_pool
from state.records import Actor, record_event

app = typer.Typer(help="Create, list and delete pools.", no_args_is_help=True)

Name = Annotated[str, typer.Argument(help="The pool's name.")]


@app.command("set")
def set_slots(
    name: Name, slots: Annotated[int, typer.Argument(help="How many task instances at once.")]
) -> None:
    """Create a pool or change its number of slots."""
    url = open_store(settings_or_exit())
    try:
        with session_scope(url) as session:
            set_pool(session, name, slots)
            record_event(session, Actor.cli(), "post_pool", extra={"pool": name, "slots": slots})
    except ValueError as error:
        fail(str(error), EXIT_BAD_INPUT)
    typer.echo(f"pool {name}: {slots} slots")


@app.command("list")
def list_pools(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Every pool with its slots and how many are in use (queued or running)."""
    url = open_store(settings_or_exit())
    with session_scope(url) as session:
        rows = pool_usage(session)
    if as_json:
        records = [{"name": n, "slots": s, "in_use": u} for n, s, u in rows]
        typer.echo(json.dumps(records, indent=2))
        return
    width = max([len("pool"), *(len(name) for name, _, _ in rows)])
    typer.echo(f"{'pool':<{width}}  slots  in use")
    for name, slots, in_use in rows:
        typer.echo(f"{name:<{width}}  {slots:>5}  {in_use:>6}")


@app.command("delete")
def delete(name: Name) -> None:
    """Delete a pool (tasks still naming it wait until it exists again)."""
    url = open_store(settings_or_exit())
    try:
        with session_scope(url) as session:
            found = delete_pool(session, name)
            if found:
                record_event(session, Actor.cli(), "delete_pool", extra={"pool": name})
    except ValueError as error:
        fail(str(error), EXIT_BAD_INPUT)
    if not found:
        fail(f"no pool named {name!r}")
    typer.echo(f"pool {name} deleted")
