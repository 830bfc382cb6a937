"""Sending an email through an SMTP connection, as Airflow's ``airflow.utils.email.send_email``.

Who sends: ``EmailOperator`` (``tradewind/standard/email.py``) and a task's own code, in the task
process, where the connection is read through the supervisor; and the supervisor itself, for a
task's ``email_on_failure`` / ``email_on_retry`` alerts, which passes the connection it read from
the store. Where to send comes from the connection (``TRADEWIND_SMTP_CONN_ID``, ``smtp_default``):
host, port, login and password, and in its extra ``ssl`` / ``starttls`` (or the SMTP provider's
``disable_ssl`` / ``disable_tls``), ``from_email``, ``timeout``, ``retry_limit``; without one, the
``TRADEWIND_SMTP_*`` settings, Airflow's ``[smtp]`` section. Only Python's ``smtplib`` is used.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from tradewind.exceptions import DagDefinitionError

if TYPE_CHECKING:
    from email.mime.multipart import MIMEMultipart

    from tradewind.connections import Connection
    from tradewind.settings import Settings

_SEPARATORS = re.compile(r"\s*[,;]\s*")


def get_email_address_list(addresses: str | Iterable[str]) -> list[str]:
    """``"a@x, b@y; c@z"`` or a list of addresses as a list (Airflow's separators: , and ;)."""
    if isinstance(addresses, str):
        return [one for one in _SEPARATORS.split(addresses.strip()) if one]
    listed = list(addresses)
    if not all(isinstance(one, str) for one in listed):
        raise TypeError(f"email addresses are strings, got {listed!r}")
    return listed


def check_email_options(email: Any, on_failure: Any, on_retry: Any) -> None:
    """Refuse, at DAG-file load, an ``email`` that is no address list, a flag that is no bool."""
    if email is not None and not (
        isinstance(email, str)
        or (isinstance(email, list | tuple) and all(isinstance(one, str) for one in email))
    ):
        raise DagDefinitionError(
            f"email must be an address or a list of addresses (strings), got {email!r}"
        )
    for name, value in (("email_on_failure", on_failure), ("email_on_retry", on_retry)):
        if not isinstance(value, bool):
            raise DagDefinitionError(f"{name} must be True or False, got {value!r}")


@dataclass(frozen=True)
class SmtpTarget:
    """Where and how one email is sent: resolved from a connection, or from the settings."""

    host: str
    port: int
    login: str | None
    password: str | None
    ssl: bool
    starttls: bool
    timeout_seconds: float
    retry_limit: int
    mail_from: str


def _flag(extra: Mapping[str, Any], name: str, default: bool) -> bool:
    """An extra's boolean; a connection made from a URI holds ``"true"`` / ``"false"``."""
    value = extra.get(name, default)
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def smtp_target(connection: Connection | None, settings: Settings) -> SmtpTarget:
    """The SMTP server of ``connection``, each part it lacks taken from the settings."""
    if connection is None:
        return SmtpTarget(
            settings.smtp_host,
            settings.smtp_port,
            None,
            None,
            settings.smtp_ssl,
            settings.smtp_starttls,
            settings.smtp_timeout_seconds,
            settings.smtp_retry_limit,
            settings.smtp_mail_from,
        )
    extra = connection.extra or {}
    ssl = _flag(extra, "ssl", settings.smtp_ssl) and not _flag(extra, "disable_ssl", False)
    starttls = _flag(extra, "starttls", settings.smtp_starttls)
    return SmtpTarget(
        connection.host or settings.smtp_host,
        connection.port or settings.smtp_port,
        connection.login,
        connection.password,
        ssl,
        starttls and not ssl and not _flag(extra, "disable_tls", False),
        float(extra.get("timeout", settings.smtp_timeout_seconds)),
        int(extra.get("retry_limit", settings.smtp_retry_limit)),
        str(extra.get("from_email") or settings.smtp_mail_from),
    )


def build_mime_message(
    mail_from: str,
    to: str | Iterable[str],
    subject: str,
    html_content: str,
    files: Sequence[str] | None = None,
    cc: str | Iterable[str] | None = None,
    bcc: str | Iterable[str] | None = None,
    mime_subtype: str = "mixed",
    mime_charset: str = "utf-8",
    custom_headers: Mapping[str, Any] | None = None,
) -> tuple[MIMEMultipart, list[str]]:
    """The message and every recipient (``bcc`` among them, never in a header)."""
    from email.mime.application import MIMEApplication
    from email.mime.multipart import MIMEMultipart
    from email.mime.text import MIMEText
    from email.utils import formatdate

    message = MIMEMultipart(mime_subtype)
    message["Subject"] = subject
    message["From"] = mail_from
    recipients = get_email_address_list(to)
    message["To"] = ", ".join(recipients)
    if cc:
        copied = get_email_address_list(cc)
        message["CC"] = ", ".join(copied)
        recipients += copied
    if bcc:
        recipients += get_email_address_list(bcc)
    message["Date"] = formatdate(localtime=True)
    message.attach(MIMEText(html_content, "html", mime_charset))
    for path in files or ():
        name = os.path.basename(path)
        with open(path, "rb") as file:
            part = MIMEApplication(file.read(), Name=name)
        part["Content-Disposition"] = f'attachment; filename="{name}"'
        part["Content-ID"] = f"<{name}>"
        message.attach(part)
    for header, value in (custom_headers or {}).items():
        message[header] = value
    return message, recipients


def send_mime_email(target: SmtpTarget, recipients: list[str], message: MIMEMultipart) -> None:
    """Hand ``message`` to the SMTP server; a server that drops the connection before it
    greets is tried again, up to ``retry_limit`` times (Airflow's rule)."""
    import smtplib

    for attempt in range(target.retry_limit + 1):
        try:
            server = _open(target)
        except smtplib.SMTPServerDisconnected:
            if attempt == target.retry_limit:
                raise
            continue
        with server:
            if target.starttls:
                import ssl

                server.starttls(context=ssl.create_default_context())
            if target.login and target.password:
                server.login(target.login, target.password)
            server.sendmail(target.mail_from, recipients, message.as_string())
        return


def _open(target: SmtpTarget) -> Any:
    import smtplib

    if target.ssl:
        import ssl

        context = ssl.create_default_context()
        return smtplib.SMTP_SSL(
            target.host, target.port, timeout=target.timeout_seconds, context=context
        )
    return smtplib.SMTP(target.host, target.port, timeout=target.timeout_seconds)


def send_email(
    to: str | Iterable[str],
    subject: str,
    html_content: str,
    files: Sequence[str] | None = None,
    dryrun: bool = False,
    cc: str | Iterable[str] | None = None,
    bcc: str | Iterable[str] | None = None,
    mime_subtype: str = "mixed",
    mime_charset: str = "utf-8",
    conn_id: str | None = None,
    custom_headers: Mapping[str, Any] | None = None,
    *,
    from_email: str | None = None,
    connection: Connection | None = None,
) -> list[str]:
    """Send an HTML email; returns its recipients. ``connection`` is given by the supervisor;
    otherwise ``conn_id`` (``TRADEWIND_SMTP_CONN_ID`` when None) is read through it.

    Raises ``OSError`` or ``smtplib.SMTPException`` when the server cannot take the message.
    """
    from tradewind.settings import get_settings

    settings = get_settings()
    if connection is None:
        connection = _connection_in_task(conn_id or settings.smtp_conn_id)
    target = smtp_target(connection, settings)
    mail_from = from_email or target.mail_from
    message, recipients = build_mime_message(
        mail_from, to, subject, html_content, files, cc, bcc, mime_subtype, mime_charset,
        custom_headers,
    )  # fmt: skip
    if not dryrun:
        send_mime_email(replace(target, mail_from=mail_from), recipients, message)
    return recipients


def _connection_in_task(conn_id: str) -> Connection | None:
    """The connection, read through the supervisor; None when it is not defined (or there is
    no running task), and the settings' server is used, as Airflow's ``[smtp]`` section is."""
    from tradewind.connections import Connection

    try:
        return Connection.get(conn_id)
    except (RuntimeError, LookupError):
        return None
