"""``tradewind users create/list/delete``: roles, argon2 hashes, one-line errors."""

from __future__ import annotations

import json
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
