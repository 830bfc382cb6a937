"""``tradewind users create/list/delete``: roles, argon2 hashes, one-line errors."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

from typer.testing import Result

from state.core.db import session_scope
from state.records.users import get_user
from tradewind.settings import get_settings

from .conftest import CliEnv

Cli = Callable[..., Result]


def test_users_are_created_listed_and_deleted(cli: Cli, env: CliEnv) -> None:
    made = cli("users", "create", "--username", "ana", "--password", "pw-1", "--role", "op")
    assert made.exit_code == 0, made.output
    assert made.output == "created user ana (op)\n"
    cli("users", "create", "--username", "bo", "--password", "pw-2")
    listed = cli("users", "list", "--json")
    assert json.loads(listed.output) == [
        {"username": "ana", "role": "op"},
        {"username": "bo", "role": "viewer"},
    ]
    with session_scope(get_settings().sql_url) as session:
        user = get_user(session, "ana")
        assert user is not None and user.password_hash.startswith("$argon2id$")
        assert "pw-1" not in user.password_hash
    assert cli("users", "delete", "bo").output == "deleted user bo\n"
    assert "bo" not in cli("users", "list").output


def test_user_mistakes_are_one_line(cli: Cli, env: CliEnv) -> None:
    cli("users", "create", "--username", "ana", "--password", "pw")
    again = cli("users", "create", "--username", "ana", "--password", "pw")
    assert again.exit_code == 1
    assert again.output.strip().endswith("a user named 'ana' already exists")
    missing = cli("users", "delete", "nobody")
    assert missing.exit_code == 1 and "no user named 'nobody'" in missing.output
    bad_role = cli("users", "create", "--username", "x", "--password", "pw", "--role", "root")
    assert bad_role.exit_code == 2 and "root" in bad_role.output


def _version(username: str) -> int:
    with session_scope(get_settings().sql_url) as session:
        user = get_user(session, username)
        assert user is not None
        return user.token_version


def test_a_new_password_a_new_role_and_a_sign_out_end_the_users_sign_ins(
    cli: Cli, env: CliEnv
) -> None:
    cli("users", "create", "--username", "ana", "--password", "pw-1")
    assert _version("ana") == 0
    changed = cli("users", "set-password", "ana", "--password", "pw-2")
    assert changed.exit_code == 0, changed.output
    assert changed.output == "changed the password of ana; their sign-ins have ended\n"
    assert _version("ana") == 1
    assert cli("users", "set-role", "ana", "--role", "viewer").exit_code == 0  # unchanged
    assert _version("ana") == 1
    assert cli("users", "set-role", "ana", "--role", "op").output == "user ana is now op\n"
    assert _version("ana") == 2
    assert cli("users", "sign-out", "ana").output == "signed ana out everywhere\n"
    assert _version("ana") == 3
    for command in (
        ["set-password", "nobody", "--password", "pw"],
        ["set-role", "nobody", "--role", "op"],
        ["sign-out", "nobody"],
    ):
        missing = cli("users", *command)
        assert missing.exit_code == 1 and "no user named 'nobody'" in missing.output, command


def test_a_password_without_a_terminal_to_ask_on_is_one_line(
    run_cli: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    created = run_cli("users", "create", "--username", "ana")  # stdin: no terminal
    assert created.returncode == 2
    assert created.stderr == (
        "error: give --password (or pipe it on stdin): there is no terminal to ask on\n"
    )
    changed = run_cli("users", "set-password", "ana")
    assert changed.returncode == 2 and changed.stderr.startswith("error: give --password")
