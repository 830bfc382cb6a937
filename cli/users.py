"""``tradewind users create/list/delete``: who may use the API server, and with which role.

Roles, each with the rights of those before it: ``viewer`` reads; ``user`` also triggers,
clears and marks; ``op`` also edits pools, variables and connections; ``admin`` also manages
users. Only an argon2 hash of a password is stored; no command prints one.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from cli.common import fail, settings_or_exit
from cli.store import open_store
from state.core import session_scope
from state.records import NoSuchUser, Role, UserExists, create_user, delete_user, list_users

app = typer.Typer(help="Create, list and delete the API server's users.", no_args_is_help=True)


@app.command()
def create(
    username: Annotated[str, typer.Option("--username", help="The name to sign in with.")],
    password: Annotated[
        str,
        typer.Option(
            "--password", prompt=True, hide_input=True, confirmation_prompt=True,
            help="Asked for when not given.",
        ),
    ],
    role: Annotated[Role, typer.Option("--role", help="What the user may do.")] = Role.VIEWER,
) -> None:  # fmt: skip
    """Create a user with a role (its password is stored hashed, never in clear)."""
    if not username.strip():
        fail("--username must not be empty", 2)
    if not password:
        fail("--password must not be empty", 2)
    from api.security import hash_password  # argon2: only this command needs it

    url = open_store(settings_or_exit())
    try:
        with session_scope(url) as session:
            create_user(session, username, hash_password(password), role)
    except UserExists as error:
        fail(str(error))
    typer.echo(f"created user {username} ({role})")


@app.command("list")
def list_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Every user and their role."""
    url = open_store(settings_or_exit())
    with session_scope(url) as session:
        users = [{"username": u.username, "role": u.role} for u in list_users(session)]
    if as_json:
        typer.echo(json.dumps(users, indent=2))
        return
    for user in users:
        typer.echo(f"{user['username']}\t{user['role']}")


@app.command()
def delete(username: Annotated[str, typer.Argument(help="The user to delete.")]) -> None:
    """Delete a user: their tokens stop working at once."""
    url = open_store(settings_or_exit())
    try:
        with session_scope(url) as session:
            delete_user(session, username)
    except NoSuchUser as error:
        fail(str(error))
    typer.echo(f"deleted user {username}")
