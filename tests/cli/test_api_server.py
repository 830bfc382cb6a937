"""``tradewind api-server`` and ``users create``'s prompt: what a user types at a terminal."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from typer.testing import CliRunner, Result

from cli.main import app
from state.core.db import session_scope
from state.records.users import get_user
from tradewind.settings import get_settings

from .conftest import CliEnv

Cli = Callable[..., Result]


def test_a_bad_api_setting_stops_the_server_with_one_line(
    env: CliEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRADEWIND_API_PORT", "99999")
    get_settings.cache_clear()  # the command reads the environment again, and serves nothing
    result = CliRunner().invoke(app, ["api-server"])
    assert result.exit_code == 2
    assert result.output.startswith(
        "error: TRADEWIND_API_PORT: Input should be less than or equal to 65535"
    )


def test_users_create_asks_for_the_password_twice_when_not_given(cli: Cli, env: CliEnv) -> None:
    result = CliRunner().invoke(app, ["users", "create", "--username", "ana"], input="pw-1\npw-1\n")
    assert result.exit_code == 0, result.output
    assert "pw-1" not in result.output
    with session_scope(get_settings().sql_url) as session:
        assert get_user(session, "ana").role == "viewer"  # type: ignore[union-attr]
