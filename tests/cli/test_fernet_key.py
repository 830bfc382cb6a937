"""``tradewind rotate-fernet-key`` and secrets at rest from the command line.

Real processes (``python -m cli``) against this machine's PostgreSQL, read directly: the rows
hold no plaintext, commands and a task still read the values, rotation moves every value to the
first key (progress shown, safe to rerun), and a key that cannot open a value is one line.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import textwrap
from collections.abc import Callable

import psycopg
import pytest
from cryptography.fernet import Fernet

from state.core import session_scope
from state.records import get_variable
from tests.cli.conftest import CliEnv, process_env, tradewind
from tradewind.settings import reload_settings

Run = Callable[..., subprocess.CompletedProcess[str]]
PASSWORD = "pw-Tq-77-secret"
PEM = "-----BEGIN KEY-----\nmiddle-line-5521\n-----END KEY-----"

READER_DAG = """
import os

from tradewind import dag, task
from tradewind.connections import Connection, Variable


@task
def read() -> list:
    return [
        Connection.get("warehouse").password == "pw-Tq-77-secret",
        Connection.get("warehouse").extra["token"] == "x-tok-31",
        Variable.get("pem") == "-----BEGIN KEY-----\\nmiddle-line-5521\\n-----END KEY-----",
        "TRADEWIND_API_SECRET_KEY" not in os.environ,
    ]


@dag(dag_id="reader")
def reader():
    read()


reader()
"""


def new_key() -> str:
    return Fernet.generate_key().decode()


@pytest.fixture
def pg_env(env: CliEnv, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("TRADEWIND_DATABASE_URL", pg_url)
    (env.dags / "reader.py").write_text(textwrap.dedent(READER_DAG))
    return pg_url


@pytest.fixture
def keyed(env: CliEnv) -> Callable[..., Run]:
    """A runner of ``python -m cli`` with TRADEWIND_FERNET_KEY set to ``keys`` (none: unset)."""

    def with_keys(*keys: str) -> Run:
        extra = {"TRADEWIND_FERNET_KEY": ",".join(keys)} if keys else {}
        if "TRADEWIND_DATABASE_URL" in os.environ:  # set by ``pg_env``
            extra["TRADEWIND_DATABASE_URL"] = os.environ["TRADEWIND_DATABASE_URL"]

        def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                tradewind(*args), input=stdin, capture_output=True, text=True, timeout=120,
                env=process_env(env, extra), cwd=env.home.parent,
            )  # fmt: skip

        return run

    return with_keys


Keyed = Callable[..., Run]


def write(run: Run) -> None:
    ok = [
        run("db", "migrate"),
        run("connections", "add", "warehouse", "--password-stdin", "--extra",
            '{"token": "x-tok-31"}', stdin=PASSWORD + "\n"),
        run("variables", "set", "pem", "--secret", stdin=PEM + "\n"),
        run("variables", "set", "greeting", "hello-there"),
    ]  # fmt: skip
    for result in ok:
        assert result.returncode == 0, result.stderr


def raw(url: str) -> str:
    with psycopg.connect(url) as connection:
        rows = connection.execute("SELECT * FROM connection").fetchall()
        rows += connection.execute("SELECT * FROM variable").fetchall()
    return repr(rows)


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_secrets_are_encrypted_read_by_a_task_and_rotated(pg_env: str, keyed: Keyed) -> None:
    old, new = new_key(), new_key()
    run = keyed(old)
    write(run)
    stored = raw(pg_env)
    for plain in (PASSWORD, "x-tok-31", "middle-line-5521", "hello-there"):
        assert plain not in stored
    assert run("variables", "get", "greeting").stdout == "hello-there\n"
    tested = run("dags", "test", "reader")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "read result: [true, true, true, true]" in tested.stdout

    both = keyed(new, old)
    rotated = both("rotate-fernet-key")
    assert rotated.returncode == 0, rotated.stderr
    assert rotated.stdout.splitlines() == [
        "connections: 1/1",
        "connections: 1 encrypted with the first key, 0 already were",
        "variables: 2/2",
        "variables: 2 encrypted with the first key, 0 already were",
    ]
    again = both("rotate-fernet-key")
    assert "variables: 0 encrypted with the first key, 2 already were" in again.stdout
    only_new = keyed(new)
    assert only_new("variables", "get", "greeting").stdout == "hello-there\n"
    assert "read result: [true, true, true, true]" in only_new("dags", "test", "reader").stdout

    only_old = keyed(old)
    refused = only_old("variables", "get", "greeting")
    assert refused.returncode == 1
    assert refused.stderr == (
        "error: variable 'greeting' cannot be decrypted with any key of TRADEWIND_FERNET_KEY: "
        "it was encrypted with a key no longer configured (add that key back, after the first)\n"
    )
    stuck = keyed(new_key(), old)("rotate-fernet-key")
    assert stuck.returncode == 1
    assert stuck.stderr.count("cannot be decrypted") == 3 and "Traceback" not in stuck.stderr
    assert stuck.stderr.splitlines()[-1] == (
        "error: 3 rows could not be decrypted (named above) and were left as they were"
    )


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_plaintext_from_before_the_key_is_encrypted_by_the_command(
    pg_env: str, keyed: Keyed
) -> None:
    plain = keyed()
    write(plain)
    assert PASSWORD in raw(pg_env)
    warned = plain("variables", "set", "other", "x")
    assert warned.stderr.count("TRADEWIND_FERNET_KEY is not set") == 1
    no_key = plain("rotate-fernet-key")
    assert no_key.returncode == 2 and no_key.stderr.startswith(
        "error: TRADEWIND_FERNET_KEY is not set: set it"
    )
    run = keyed(new_key())
    done = run("rotate-fernet-key")
    assert done.returncode == 0, done.stderr
    assert "variables: 3 encrypted with the first key, 0 already were" in done.stdout
    assert PASSWORD not in raw(pg_env) and "middle-line-5521" not in raw(pg_env)
    assert "read result: [true, true, true, true]" in run("dags", "test", "reader").stdout


@pytest.mark.timeout(300)
def test_standalone_makes_a_private_key_and_encrypts_what_was_plaintext(
    env: CliEnv, keyed: Keyed
) -> None:
    (env.dags / "reader.py").write_text(textwrap.dedent(READER_DAG))
    write(keyed())
    database = env.home / "tradewind.db"
    assert PASSWORD.encode() in database.read_bytes()
    api_key = {"TRADEWIND_API_SECRET_KEY": "k" * 40}
    done = subprocess.run(
        tradewind("standalone", "--run", "reader"), capture_output=True, text=True, timeout=240,
        env=process_env(env, api_key), cwd=env.home.parent,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "read result: [true, true, true, true]" in done.stdout  # the task saw no API key
    key_file = env.home / "fernet_key"
    assert key_file.stat().st_mode & 0o777 == 0o600
    Fernet(key_file.read_text().strip().encode())
    with sqlite3.connect(database) as connection:
        rows = connection.execute("SELECT * FROM connection").fetchall()
        rows += connection.execute("SELECT * FROM variable").fetchall()
    assert PASSWORD not in repr(rows) and "hello-there" not in repr(rows)
    assert keyed()("variables", "get", "greeting").stdout == "hello-there\n"  # the home's key


def test_a_bad_key_stops_a_command_with_one_line(run_cli: Run) -> None:
    result = run_cli("variables", "list", extra_env={"TRADEWIND_FERNET_KEY": "short"})
    assert result.returncode == 2
    assert result.stderr == (
        "error: TRADEWIND_FERNET_KEY: Value error, key 1 is not a Fernet key (32 bytes in "
        "URL-safe base64, 44 characters; make one with `tradewind rotate-fernet-key "
        "--generate`) (got 5 characters)\n"
    )
    generated = run_cli("rotate-fernet-key", "--generate")
    assert generated.returncode == 0
    Fernet(generated.stdout.strip().encode())  # a key Fernet takes


def test_a_secret_variable_is_read_from_stdin_whole(
    keyed: Keyed, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = new_key()
    run = keyed(key)
    assert run("variables", "set", "pem", "--secret", stdin=PEM + "\n").returncode == 0
    assert "middle-line" not in run("variables", "list").stdout
    missing = run("variables", "set", "plain")
    assert missing.returncode == 2
    assert missing.stderr == "error: give the VALUE (or --secret to read it from stdin)\n"
    monkeypatch.setenv("TRADEWIND_FERNET_KEY", key)
    with session_scope(reload_settings().sql_url) as session:
        row = get_variable(session, "pem")
        assert row is not None and (row.value, row.is_secret, row.is_encrypted) == (PEM, True, True)
