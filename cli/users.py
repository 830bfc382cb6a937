"""``tradewind users``: who may use the API server, and with which role.

``create``, ``list``, ``delete``, ``set-password``, ``set-role`` and ``sign-out``. Roles, each with
the rights of those before it: ``viewer`` reads; ``user`` also triggers, clears and marks; ``op``
also edits pools, variables and connections; ``admin`` also manages users. Only an argon2 hash
of a password is stored; no command prints one. A deletion, a new password, a new role and a
sign-out end every token and session cookie of the user at once.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from cli.common import fail, settings_or_exit
from cli.store import open_store
from state.core import session_scope
from state.records import (
    About,
    Actor,
    NoSuchUser,
    Role,
    UserExists,
    create_user,
    delete_user,
    get_user,
    list_users,
    record_event,
    revoke_tokens,
    set_password_hash,
    set_role,
)

if TYPE_CHECKING:
    from state.core import Session

app = typer.Typer(
    help="Create, list, change and delete the API server's users.", no_args_is_help=True
)

_PASSWORD_OPTION = typer.Option(
    "--password",
    help="Asked for (twice, hidden) on a terminal when not given; else stdin's first line.",
)


def _password(given: str | None) -> str:
    """The ``--password`` given, or one asked for on the terminal; never empty."""
    if given is None:
        if not sys.stdin.isatty():  # a pipe: its first line is the password (nothing echoed)
            given = sys.stdin.readline().rstrip("\r\n")
            if not given:
                fail("give --password (or pipe it on stdin): there is no terminal to ask on", 2)
        else:
            given = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    if not given:
        fail("--password must not be empty", 2)
    return given


@app.command()
def create(
    username: Annotated[str, typer.Option("--username", help="The name to sign in with.")],
    password: Annotated[str | None, _PASSWORD_OPTION] = None,
    role: Annotated[Role, typer.Option("--role", help="What the user may do.")] = Role.VIEWER,
) -> None:
    """Create a user with a role (its password is stored hashed, never in clear)."""
    if not username.strip():
        fail("--username must not be empty", 2)
    password = _password(password)
    from api.security import hash_password  # argon2: only this command needs it

    url = open_store(settings_or_exit())
    try:
        with session_scope(url) as session:
            create_user(session, username, hash_password(password), role)
            extra = {"username": username, "role": role}
            record_event(session, Actor.cli(), "create_user", About(), extra)
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
    """Delete a user: their tokens and sessions stop working at once."""
    _change_user(lambda session: delete_user(session, username), "delete_user", username)
    typer.echo(f"deleted user {username}")


@app.command("set-password")
def set_password(
    username: Annotated[str, typer.Argument(help="The user whose password changes.")],
    password: Annotated[str | None, _PASSWORD_OPTION] = None,
) -> None:
    """Give a user a new password: their tokens and sessions stop working at once."""
    password = _password(password)
    from api.security import hash_password

    hashed = hash_password(password)
    _change_user(
        lambda session: set_password_hash(session, username, hashed), "patch_user", username
    )
    typer.echo(f"changed the password of {username}; their sign-ins have ended")


@app.command("set-role")
def set_role_command(
    username: Annotated[str, typer.Argument(help="The user whose role changes.")],
    role: Annotated[Role, typer.Option("--role", help="What the user may do.")],
) -> None:
    """Give a user another role: their tokens and sessions stop working at once."""
    _change_user(lambda session: set_role(session, username, role), "patch_user", username)
    typer.echo(f"user {username} is now {role}")


@app.command("sign-out")
def sign_out(username: Annotated[str, typer.Argument(help="The user to sign out.")]) -> None:
    """End every token and session of a user (a stolen token, a lost laptop)."""
    url = open_store(settings_or_exit())
    with session_scope(url) as session:
        user = get_user(session, username)
        if user is None:
            fail(f"no user named {username!r}")
        revoke_tokens(session, user.id, user.token_version)
    typer.echo(f"signed {username} out everywhere")


def _change_user(change: Callable[[Session], object], event: str, username: str) -> None:
    """``change`` in one transaction of the store, with its ``event`` in the event log; a user
    that does not exist is one line."""
    url = open_store(settings_or_exit())
    try:
        with session_scope(url) as session:
            change(session)
            record_event(session, Actor.cli(), event, extra={"username": username})
    except NoSuchUser as error:
        fail(str(error))
