"""The alert email of a try that failed for good (``email_on_failure``) or goes up for retry
(``email_on_retry``), sent by the supervisor once the store has recorded that verdict.

Sent here, not in the task process: only the store knows whether a failure is retried (its
tries left, the retry policy), the task process never reads the store, and a try the task never
reported (a timeout, a crash) must alert too. The SMTP connection is read from the store. The
send is after the end is recorded and its downstream published, so a slow or broken server
delays nothing the run waits on; a send that fails is one line in the try's log, and the try's
state stays what the store recorded.
"""

from __future__ import annotations

import html
import smtplib
import socket

from sqlalchemy.exc import SQLAlchemyError

from state.engine import Failed, HeldTry, Outcome
from state.records import StoreLookups
from tradewind.connections import Connection
from tradewind.emails import send_email
from tradewind.exceptions import TaskNotFound
from tradewind.settings import Settings
from worker.dags import find_task
from worker.supervisor.logs import TryLog

#: The verdicts that alert, and the task option that turns each on.
_ALERTS = {"failed": "email_on_failure", "up_for_retry": "email_on_retry"}


def send_alert(
    held: HeldTry, state: str, outcome: Outcome | None, settings: Settings, log: TryLog
) -> None:
    """Email the task's ``email`` addresses if ``state`` is a verdict its options alert on."""
    option = _ALERTS.get(state)
    if option is None:
        return
    try:
        _, task = find_task(held.fileloc, held.ti.dag_id, held.ti.task_id)
    except TaskNotFound:  # its failure said so already; no address is known
        return
    if not task.options.email or not getattr(task.options, option):
        return
    error = outcome.error if isinstance(outcome, Failed) else "the try ended without a report"
    subject, body = alert_message(held, state, error, settings)
    try:
        connection = _connection(settings)
        sent = send_email(task.options.email, subject, body, connection=connection)
    except (OSError, smtplib.SMTPException, SQLAlchemyError, ValueError) as failure:
        log.line("supervisor", f"could not send the {state} email: {_one_line(failure)}")
        return
    log.line("supervisor", f"sent the {state} email to {', '.join(sent)}")


def alert_message(held: HeldTry, state: str, error: str, settings: Settings) -> tuple[str, str]:
    """The subject and HTML body, as Airflow's default alert: the try, the error, the log."""
    ti = held.ti
    where = f" map_index={ti.map_index}" if ti.map_index >= 0 else ""
    instance = f"{ti.dag_id}.{ti.task_id} {ti.run_id}{where}"
    subject = f"Tradewind alert: <TaskInstance: {instance} [{state}]>"
    try_number = held.fence.try_number
    link = (
        f"{settings.public_url}/dags/{ti.dag_id}/runs/{ti.run_id}/tasks/{ti.task_id}"
        f"?map_index={ti.map_index}&try_number={try_number}"
    )
    body = (
        f"Try {try_number} out of {held.max_tries}<br>"
        f"Exception:<br>{html.escape(error).replace(chr(10), '<br>')}<br>"
        f'Log: <a href="{html.escape(link)}">Link</a><br>'
        f"Host: {html.escape(socket.gethostname())}<br>"
    )
    return subject, body


def _connection(settings: Settings) -> Connection | None:
    """The SMTP connection from the store; None when it is not defined (the settings' server)."""
    return StoreLookups(settings.sql_url).find_connection(settings.smtp_conn_id)


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
