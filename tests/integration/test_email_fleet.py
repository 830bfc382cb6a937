"""Email alerts through the real fleet (scheduler and Celery worker on PostgreSQL + Redis), sent
to a real SMTP server process on loopback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from state.core.db import session_scope
from state.records import put_connection
from tests.integration.conftest import Fleet
from tests.smtp_server import SmtpServer, start_smtp_server

pytestmark = pytest.mark.integration
DAGS = Path(__file__).parent / "email_dags"


@pytest.fixture
def smtp(tmp_path: Path) -> Iterator[SmtpServer]:
    yield from start_smtp_server(tmp_path / "smtp")


@pytest.fixture
def refusing(tmp_path: Path) -> Iterator[SmtpServer]:
    yield from start_smtp_server(tmp_path / "refusing", refuse=True)


def point_smtp_default_at(fleet: Fleet, server: SmtpServer) -> None:
    with session_scope(fleet.url) as session:
        put_connection(
            session,
            "smtp_default",
            conn_type="smtp",
            host="127.0.0.1",
            port=server.port,
            extra={"starttls": False, "from_email": "fleet@team.org"},
        )


def test_a_failed_task_emails_and_a_refused_email_changes_nothing(
    make_fleet: Callable[..., Fleet], smtp: SmtpServer, refusing: SmtpServer
) -> None:
    fleet = make_fleet(DAGS)
    point_smtp_default_at(fleet, smtp)
    fleet.start_worker()
    fleet.start_scheduler()

    fleet.trigger("email_alerts", "r1")
    assert fleet.wait_run("email_alerts", "r1") == "failed"
    [message] = smtp.wait_messages(1)
    assert message["Subject"] == "Tradewind alert: <TaskInstance: email_alerts.fails r1 [failed]>"
    assert (message["From"], message["To"]) == ("fleet@team.org", "ops@team.org")
    body = message.get_body(("html",))
    assert body is not None and "RuntimeError: the warehouse is closed" in body.get_content()

    point_smtp_default_at(fleet, refusing)
    fleet.trigger("email_alerts", "r2")
    assert fleet.wait_run("email_alerts", "r2") == "failed"
    assert fleet.task_states("email_alerts", "r2") == {"fails": ("failed", 1)}
    log = (fleet.home / "logs/email_alerts/r2/fails/-1/1.log").read_text()
    lines = [line for line in log.splitlines() if "supervisor:" in line and "failed email" in line]
    assert len(lines) == 1 and "could not send the failed email: SMTPDataError: (554" in lines[0]
    assert len(smtp.messages()) == 1
