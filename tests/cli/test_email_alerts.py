"""A task's ``email_on_failure`` / ``email_on_retry`` alerts, and ``EmailOperator``, under
``tradewind dags test`` (the worker's own ``execute``) against a real SMTP server on loopback."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.smtp_server import SmtpServer, start_smtp_server

from .conftest import CliEnv, run_tradewind

ALERTING_DAG = """
import datetime as dt
from tradewind import DAG, task
from tradewind.standard.email import EmailOperator

default_args = {"email": ["ops@team.org", "lead@team.org"], "retries": 1, "retry_delay": 0}

with DAG("alerting", start_date=dt.datetime(2024, 1, 1), default_args=default_args):
    @task
    def breaks():
        raise ValueError("the <numbers> do not add up")

    @task(email_on_retry=False, email_on_failure=False)
    def quiet():
        raise ValueError("nobody hears this")

    EmailOperator(
        task_id="report", to="{{ params.to }}", subject="report of {{ run_id }}",
        html_content="<p>done</p>", params={"to": "boss@team.org"},
    )
    breaks()
    quiet()
"""


@pytest.fixture
def smtp(tmp_path: Path) -> Iterator[SmtpServer]:
    yield from start_smtp_server(tmp_path / "smtp")


@pytest.fixture
def refusing(tmp_path: Path) -> Iterator[SmtpServer]:
    yield from start_smtp_server(tmp_path / "refusing", refuse=True)


def alerting(env: CliEnv) -> None:
    (env.dags / "alerting.py").write_text(textwrap.dedent(ALERTING_DAG))


def add_smtp_connection(env: CliEnv, server: SmtpServer) -> None:
    uri = f"smtp://127.0.0.1:{server.port}?starttls=false&from_email=tradewind%40team.org"
    added = run_tradewind(env, "connections", "add", "smtp_default", "--uri", uri)
    assert added.returncode == 0, added.stderr


def test_a_failing_task_emails_its_retry_then_its_failure(env: CliEnv, smtp: SmtpServer) -> None:
    alerting(env)
    add_smtp_connection(env, smtp)

    done = run_tradewind(env, "dags", "test", "alerting", "--run-id", "r1")

    assert "alerting r1: failed" in done.stdout + done.stderr
    messages = smtp.wait_messages(3)
    subjects = sorted(str(m["Subject"]) for m in messages)
    assert subjects == [
        "Tradewind alert: <TaskInstance: alerting.breaks r1 [failed]>",
        "Tradewind alert: <TaskInstance: alerting.breaks r1 [up_for_retry]>",
        "report of r1",
    ]
    alert = next(m for m in messages if "[failed]" in str(m["Subject"]))
    assert (alert["From"], alert["To"]) == ("tradewind@team.org", "ops@team.org, lead@team.org")
    body = alert.get_body(("html",))
    assert body is not None
    text = body.get_content()
    assert "Try 2 out of 2" in text
    assert "ValueError: the &lt;numbers&gt; do not add up" in text
    assert "/dags/alerting/runs/r1/tasks/breaks?map_index=-1&amp;try_number=2" in text
    log = (env.home / "logs/alerting/r1/breaks/-1/2.log").read_text()
    assert "sent the failed email to ops@team.org, lead@team.org" in log


def test_a_refused_email_is_one_log_line_and_changes_no_state(
    env: CliEnv, refusing: SmtpServer
) -> None:
    alerting(env)
    add_smtp_connection(env, refusing)

    done = run_tradewind(env, "dags", "test", "alerting", "--run-id", "r1")

    output = done.stdout + done.stderr
    assert "breaks try 1: up_for_retry" in output and "breaks try 2: failed" in output
    # EmailOperator's own send fails its task (retried, as default_args say).
    assert "report try 1: up_for_retry  SMTPDataError: (554" in output
    assert "report try 2: failed" in output
    log = (env.home / "logs/alerting/r1/breaks/-1/2.log").read_text()
    lines = [line for line in log.splitlines() if "supervisor:" in line and "email" in line]
    assert len(lines) == 1
    assert lines[0].endswith(
        "supervisor: could not send the failed email: "
        "SMTPDataError: (554, b'Transaction failed: refused by the test server')"
    )
