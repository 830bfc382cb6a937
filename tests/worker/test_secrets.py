"""Connections, Variables and secrets as a Python task sees them: looked up through the
supervisor, and masked in every line of the try's log and in the recorded error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker_config import message_of
from state.core.db import session_scope
from state.records.connections import put_connection, set_variable
from tests.state.harness import Home, tradewind_home
from worker.supervisor.execute import execute
from worker.supervisor.logs import log_path

DAG = """
import sys
from tradewind import Connection, Variable, dag, mask_secret, task

@task
def leaky():
    warehouse = Connection.get("warehouse")
    print(f"login {warehouse.login} password {warehouse.password} uri {warehouse.get_uri()}")
    print("token", Variable.get("api_token"), "plain", Variable.get("region"), file=sys.stderr)
    print("missing", Variable.get("nope", default="fallback"))
    mask_secret("minted-session-31337")
    print("session minted-session-31337")
    raise RuntimeError(f"could not log in with {warehouse.password}")

@task
def unknown():
    Connection.get("nowhere")

@dag(dag_id="secrets")
def secrets():
    leaky()
    unknown()

secrets()
"""
SECRETS = ("pw-1234/secret", "pw-1234%2Fsecret", "tok-5678-secret", "minted-session-31337")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    with tradewind_home(tmp_path, monkeypatch) as made:
        made.write_dag(DAG)
        assert made.sync().import_errors == {}
        with session_scope(made.url) as session:
            put_connection(
                session,
                "warehouse",
                conn_type="postgres",
                host="db",
                login="etl",
                password="pw-1234/secret",
            )
            set_variable(session, "api_token", "tok-5678-secret")
            set_variable(session, "region", "eu-west-1")
        yield made


def run(home: Home) -> int:
    run_pk = home.trigger("secrets")
    for enqueue in home.schedule(run_pk):
        execute(message_of(enqueue), home.settings, lambda _: None)
    return run_pk


def log_of(home: Home, run_pk: int, task_id: str) -> str:
    run = home.run(run_pk)
    return log_path(home.settings.logs_folder, "secrets", run.run_id, task_id, -1, 1).read_text()


def test_a_tasks_secrets_appear_nowhere_in_its_log_or_its_error(home: Home) -> None:
    run_pk = run(home)
    log = log_of(home, run_pk, "leaky")
    for secret in SECRETS:
        assert secret not in log
    assert "stdout: login etl password *** uri postgres://etl:***@db" in log
    assert "stderr: token *** plain eu-west-1" in log
    assert "stdout: missing fallback" in log
    assert "stdout: session ***" in log
    assert "RuntimeError: could not log in with ***" in log
    error = home.ti(run_pk, "leaky").error
    assert error == "RuntimeError: could not log in with ***"


def test_an_unknown_connection_fails_the_task_naming_it(home: Home) -> None:
    run_pk = run(home)
    assert home.ti(run_pk, "unknown").error == "RequestFailed: connection 'nowhere' is not defined"
