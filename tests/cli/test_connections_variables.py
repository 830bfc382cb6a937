"""``tradewind connections`` and ``tradewind variables``: saved, listed, deleted; secrets never
printed, and a task's look-ups read what the commands wrote."""

from __future__ import annotations

import json
from collections.abc import Callable

from typer.testing import CliRunner, Result

from cli.main import app
from state.core.db import session_scope
from state.records.connections import get_connection, get_variable
from tradewind.settings import get_settings

Cli = Callable[..., Result]
PASSWORD = "s3cr@t-pw-9"


def test_a_connection_from_a_uri_is_stored_field_by_field(cli: Cli) -> None:
    uri = "postgres://etl:s3cr%40t-pw-9@db.example:5432/analytics?sslmode=require"
    result = cli("connections", "add", "warehouse", "--uri", uri)
    assert result.exit_code == 0, result.output
    with session_scope(get_settings().sql_url) as session:
        row = get_connection(session, "warehouse")
        assert row is not None
        stored = (row.conn_type, row.host, row.port, row.login, row.password, row.schema, row.extra)
    assert stored == (
        "postgres",
        "db.example",
        5432,
        "etl",
        PASSWORD,
        "analytics",
        {"sslmode": "require"},
    )


def test_list_masks_the_password_and_hides_the_extra_values(cli: Cli) -> None:
    extra = json.dumps({"endpoint_url": "http://127.0.0.1:9000", "token": "extra-token-77"})
    assert (
        cli(
            "connections",
            "add",
            "s3",
            "--conn-type",
            "aws",
            "--login",
            "AKIA",
            "--password",
            PASSWORD,
            "--extra",
            extra,
        ).exit_code
        == 0
    )
    table = cli("connections", "list")
    as_json = cli("connections", "list", "--json")
    for result in (table, as_json):
        assert result.exit_code == 0
        assert PASSWORD not in result.output
        assert "extra-token-77" not in result.output
    assert "***" in table.output
    (record,) = json.loads(as_json.output)
    assert record["password"] == "***"
    assert record["extra_keys"] == ["endpoint_url", "token"]


def test_the_password_can_come_from_stdin(cli: Cli) -> None:
    cli("variables", "list")  # the store exists, so the command below is all that reads stdin
    args = ["connections", "add", "api", "--password-stdin"]
    result = CliRunner().invoke(app, args, input=f"{PASSWORD}\n")
    assert result.exit_code == 0, result.output
    assert PASSWORD not in result.output
    with session_scope(get_settings().sql_url) as session:
        assert get_connection(session, "api").password == PASSWORD  # type: ignore[union-attr]


def test_adding_twice_needs_replace_and_delete_removes(cli: Cli) -> None:
    assert cli("connections", "add", "c", "--host", "one").exit_code == 0
    again = cli("connections", "add", "c", "--host", "two")
    assert again.exit_code == 1
    assert "already exists (use --replace" in again.output
    assert cli("connections", "add", "c", "--host", "two", "--replace").exit_code == 0
    assert cli("connections", "delete", "c").exit_code == 0
    missing = cli("connections", "delete", "c")
    assert missing.exit_code == 1
    assert "no connection 'c'" in missing.output


def test_bad_input_exits_2_with_one_line(cli: Cli) -> None:
    assert cli("connections", "add", "c", "--extra", "[1]").exit_code == 2
    assert cli("connections", "add", "c", "--uri", "no-scheme").exit_code == 2
    both = cli("connections", "add", "c", "--uri", "http://h", "--host", "h")
    assert both.exit_code == 2
    assert "either --uri or the separate fields" in both.output


def test_variables_set_get_list_delete(cli: Cli) -> None:
    assert cli("variables", "set", "greeting", "hello").exit_code == 0
    got = cli("variables", "get", "greeting")
    assert (got.exit_code, got.output) == (0, "hello\n")
    assert cli("variables", "set", "limits", '{"rows": 5}', "--json").exit_code == 0
    assert cli("variables", "set", "broken", "{", "--json").exit_code == 2
    listed = cli("variables", "list", "--json")
    assert json.loads(listed.output) == [
        {"key": "greeting", "value": "hello"},
        {"key": "limits", "value": '{"rows": 5}'},
    ]
    assert cli("variables", "delete", "greeting").exit_code == 0
    assert cli("variables", "get", "greeting").exit_code == 1


def test_secret_variables_are_never_printed(cli: Cli) -> None:
    assert cli("variables", "set", "db_pw", "hush-1234", "--secret").exit_code == 0
    assert cli("variables", "set", "api_token", "tok-5678").exit_code == 0  # secret by its name
    outputs = [
        cli("variables", "get", "db_pw"),
        cli("variables", "get", "api_token"),
        cli("variables", "list"),
        cli("variables", "list", "--json"),
    ]
    assert [result.exit_code for result in outputs] == [1, 1, 0, 0]
    for result in outputs:
        assert "hush-1234" not in result.output
        assert "tok-5678" not in result.output
    assert "db_pw=***" in outputs[2].output
    with session_scope(get_settings().sql_url) as session:
        row = get_variable(session, "db_pw")
        assert row is not None and (row.value, row.is_secret) == ("hush-1234", True)
