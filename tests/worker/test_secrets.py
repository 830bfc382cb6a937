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

@task
def pem():
    key = Variable.get("deploy_key")  # marked secret: masked on each of its lines
    print("the key is")
    print(key)
    print("and its second line alone:", key.splitlines()[1])

@task
def extras():
    api = Connection.get("vendor_api")
    print("extra", api.extra)
    print("token", api.extra["api_token"], "nested", api.extra["auth"]["client_secret"])
    print("region", api.extra["region"], "uri", api.get_uri())

@dag(dag_id="secrets")
def secrets():
    leaky()
    unknown()
    pem()
    extras()

secrets()
"""
SECRETS = ("pw-1234/secret", "pw-1234%2Fsecret", "tok-5678-secret", "minted-session-31337")
PEM = """-----BEGIN RSA PRIVATE KEY-----
MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu
KUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQJAIJLixBy2qpFoS4DSmoEm
o3qGy0t6z09AIJtH+5OeRV1be+N4cDYJKffGzDa88vQENZiRm0GRq6a+HPGQMd2k
-----END RSA PRIVATE KEY-----"""


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
            set_variable(session, "deploy_key", PEM, is_secret=True)
            put_connection(
                session,
                "vendor_api",
                conn_type="http",
                host="api.vendor.example",
                extra={
                    "api_token": "vendor token/with+chars",
                    "auth": {"client_secret": "nested-s3cr3t"},
                    "region": "eu-central",
                },
            )
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


def test_a_multi_line_secret_shows_as_stars_on_every_line_it_spans(home: Home) -> None:
    log = log_of(home, run(home), "pem")
    for line in PEM.splitlines():
        assert line not in log
    assert "stdout: the key is" in log
    key_lines = log.split("stdout: the key is\n", 1)[1].splitlines()[:5]
    assert [line.split("] ", 1)[1] for line in key_lines] == ["stdout: ***"] * 5
    assert "stdout: and its second line alone: ***" in log


def test_a_connections_sensitive_extra_values_are_masked_as_the_api_masks_them(
    home: Home,
) -> None:
    log = log_of(home, run(home), "extras")
    for secret in ("vendor token/with+chars", "vendor+token%2Fwith%2Bchars", "nested-s3cr3t"):
        assert secret not in log
    assert "stdout: token *** nested ***" in log
    assert "'api_token': '***'" in log and "'client_secret': '***'" in log
    assert "region eu-central uri http://api.vendor.example?api_token=***" in log
