"""``send_email`` and ``EmailOperator`` against a real SMTP server process on loopback."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.smtp_server import SmtpServer, start_smtp_server
from tradewind import DAG
from tradewind.connections import Connection
from tradewind.emails import get_email_address_list, send_email, smtp_target
from tradewind.exceptions import DagDefinitionError
from tradewind.settings import Settings, reload_settings
from tradewind.standard.email import EmailOperator


@pytest.fixture
def smtp(tmp_path: Path) -> Iterator[SmtpServer]:
    yield from start_smtp_server(tmp_path / "smtp")


@pytest.fixture
def refusing(tmp_path: Path) -> Iterator[SmtpServer]:
    yield from start_smtp_server(tmp_path / "refusing", refuse=True)


def plain(server: SmtpServer, **extra: str) -> Connection:
    """The test server as a connection: no TLS (aiosmtpd here speaks plain SMTP)."""
    return Connection("smtp_default", "smtp", "127.0.0.1", port=server.port, extra=extra)


def test_addresses_are_split_on_commas_and_semicolons() -> None:
    assert get_email_address_list("a@x.org, b@y.org;c@z.org") == ["a@x.org", "b@y.org", "c@z.org"]
    assert get_email_address_list(["a@x.org"]) == ["a@x.org"]
    with pytest.raises(TypeError, match="email addresses are strings"):
        get_email_address_list([1])  # type: ignore[list-item]


def test_send_email_delivers_to_the_server(smtp: SmtpServer, tmp_path: Path) -> None:
    attachment = tmp_path / "report.csv"
    attachment.write_text("a,b\n1,2\n")
    connection = plain(smtp, starttls="false", from_email="alerts@team.org")

    sent = send_email(
        "to@x.org",
        "the subject",
        "<b>body</b>",
        files=[str(attachment)],
        cc="cc@x.org",
        bcc=["hidden@x.org"],
        connection=connection,
    )

    assert sent == ["to@x.org", "cc@x.org", "hidden@x.org"]
    [message] = smtp.wait_messages(1)
    assert (message["Subject"], message["From"]) == ("the subject", "alerts@team.org")
    assert (message["To"], message["CC"], message["BCC"]) == ("to@x.org", "cc@x.org", None)
    parts = list(message.iter_attachments())
    assert [part.get_filename() for part in parts] == ["report.csv"]
    body = message.get_body(("html",))
    assert body is not None and "<b>body</b>" in body.get_content()
    assert smtp.envelopes() == [
        {"from": "alerts@team.org", "to": ["to@x.org", "cc@x.org", "hidden@x.org"]}
    ]


def test_a_dry_run_sends_nothing(smtp: SmtpServer) -> None:
    send_email("to@x.org", "s", "b", dryrun=True, connection=plain(smtp, starttls="false"))
    assert smtp.messages() == []


def test_a_refusing_server_raises_the_smtp_error(refusing: SmtpServer) -> None:
    import smtplib

    with pytest.raises(smtplib.SMTPDataError, match="refused by the test server"):
        send_email("to@x.org", "s", "b", connection=plain(refusing, starttls="false"))


def test_the_target_comes_from_the_connection_then_the_settings() -> None:
    settings = Settings(smtp_host="mail.local", smtp_port=2525, smtp_mail_from="tw@x.org")

    from_settings = smtp_target(None, settings)
    assert (from_settings.host, from_settings.port, from_settings.starttls) == (
        "mail.local",
        2525,
        True,
    )
    assert from_settings.mail_from == "tw@x.org"
    ssl = smtp_target(Connection("c", host="smtp.x.org", extra={"ssl": "true"}), settings)
    assert (ssl.host, ssl.port, ssl.ssl, ssl.starttls) == ("smtp.x.org", 2525, True, False)
    # The SMTP provider's spelling: SSL unless disabled, STARTTLS unless disabled.
    provider = Connection("c", port=587, extra={"disable_ssl": True, "disable_tls": True})
    assert (smtp_target(provider, settings).ssl, smtp_target(provider, settings).starttls) == (
        False,
        False,
    )


def test_email_operator_sends_its_rendered_fields(
    smtp: SmtpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No connection outside a running task: the settings' server is used, as Airflow's [smtp].
    monkeypatch.setenv("TRADEWIND_SMTP_HOST", "127.0.0.1")
    monkeypatch.setenv("TRADEWIND_SMTP_PORT", str(smtp.port))
    monkeypatch.setenv("TRADEWIND_SMTP_STARTTLS", "false")
    reload_settings()
    try:
        with DAG("mail", start_date=dt.datetime(2024, 1, 1, tzinfo=dt.UTC)):
            operator = EmailOperator(
                task_id="send", to="{{ params.who }}@x.org", subject="{{ ds }}", html_content="hi"
            )
        operator.render_template_fields({"params": {"who": "ops"}, "ds": "2024-01-02"})
        operator.execute({})
    finally:
        monkeypatch.undo()
        reload_settings()
    [message] = smtp.wait_messages(1)
    assert (message["To"], message["Subject"]) == ("ops@x.org", "2024-01-02")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"email": 5}, "email must be an address or a list of addresses"),
        ({"email": ["a@x.org", None]}, "email must be an address or a list of addresses"),
        ({"email_on_retry": "no"}, "email_on_retry must be True or False, got 'no'"),
    ],
)
def test_bad_email_options_are_refused_at_load(options: dict[str, object], message: str) -> None:
    from tradewind import task

    with pytest.raises(DagDefinitionError, match=message):
        task(**options)(lambda: None)
