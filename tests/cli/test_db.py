"""``tradewind db migrate`` and ``open_store``: who may change the schema, and the errors."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from typer.testing import CliRunner, Result

from cli.main import app
from state.core.migrate import current_revision
from state.core.models import SCHEMA_REVISION
from tradewind.settings import get_settings

from .conftest import CliEnv

Cli = Callable[..., Result]

FRESH_STORE = True  # the first command finds no store (tests/cli/conftest.py)


def one_error_line(result: Result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def test_db_migrate_creates_the_schema_then_has_nothing_to_do(cli: Cli, env: CliEnv) -> None:
    first = cli("db", "migrate")
    assert first.exit_code == 0, first.output
    assert f"upgraded schema none -> {SCHEMA_REVISION}" in first.stdout
    assert current_revision(get_settings().sql_url) == SCHEMA_REVISION

    again = cli("db", "migrate")
    assert again.exit_code == 0, again.output
    assert f"already at schema {SCHEMA_REVISION}" in again.stdout


def test_the_embedded_sqlite_store_is_migrated_on_first_use(cli: Cli, env: CliEnv) -> None:
    result = cli("dags", "list")

    assert result.exit_code == 0, result.output
    assert current_revision(get_settings().sql_url) == SCHEMA_REVISION


@pytest.mark.integration
def test_a_postgresql_store_not_migrated_asks_for_db_migrate(
    cli: Cli, env: CliEnv, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRADEWIND_DATABASE_URL", pg_url)

    refused = cli("dags", "list")
    assert refused.exit_code == 1
    assert "run `tradewind db migrate`" in one_error_line(refused)
    assert current_revision(pg_url) is None  # a shared database is never altered on the side

    assert cli("db", "migrate").exit_code == 0
    listed = cli("dags", "list")
    assert listed.exit_code == 0, listed.output
    assert "pair" in listed.stdout


def test_an_unreachable_store_is_one_line_without_the_password(
    cli: Cli, env: CliEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Port 1: nothing listens there, the connection is refused at once.
    monkeypatch.setenv("TRADEWIND_DATABASE_URL", "postgresql://tw:s3cret@127.0.0.1:1/tw")

    result = cli("runs", "show", "pair", "r1")

    assert result.exit_code == 1
    line = one_error_line(result)
    assert "cannot open the SQL store at postgresql://tw:***@127.0.0.1:1/tw: " in line
    assert "s3cret" not in result.output


def test_the_object_storage_state_backend_without_a_url_stops_with_exit_2(
    env: CliEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRADEWIND_STATE_STORE_BACKEND", "object_storage")
    get_settings.cache_clear()  # read again by the command itself

    result = CliRunner().invoke(app, ["db", "migrate"])

    assert result.exit_code == 2
    assert one_error_line(result) == (
        "error: TRADEWIND_STATE_STORE_BACKEND=object_storage needs TRADEWIND_OBJECT_STORAGE_URL "
        "(an fsspec URL such as s3://bucket/prefix or file:///path)"
    )
