"""``EmailOperator``: send an email from a task, through the SMTP connection ``conn_id``.

As Airflow's (``airflow.providers.smtp.operators.smtp.EmailOperator``, once
``airflow.operators.email``): its addresses, subject, body and attachments are template fields, a
body ending in ``.html`` is a template file, and the connection is read through the supervisor
(``tradewind/emails.py`` says which parts of it are used). A server that refuses fails the task.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from tradewind.emails import send_email
from tradewind.operators import BaseOperator


class EmailOperator(BaseOperator):
    """``EmailOperator(task_id=..., to=..., subject=..., html_content=...)``."""

    template_fields: ClassVar[tuple[str, ...]] = (
        "to",
        "from_email",
        "subject",
        "html_content",
        "files",
        "cc",
        "bcc",
    )
    template_ext: ClassVar[tuple[str, ...]] = (".html",)

    def __init__(
        self,
        *,
        to: str | Sequence[str],
        subject: str,
        html_content: str,
        files: Sequence[str] | None = None,
        cc: str | Sequence[str] | None = None,
        bcc: str | Sequence[str] | None = None,
        mime_subtype: str = "mixed",
        mime_charset: str = "utf-8",
        conn_id: str | None = None,
        from_email: str | None = None,
        custom_headers: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.to = to
        self.subject = subject
        self.html_content = html_content
        self.files = list(files or [])
        self.cc = cc
        self.bcc = bcc
        self.mime_subtype = mime_subtype
        self.mime_charset = mime_charset
        self.conn_id = conn_id
        self.from_email = from_email
        self.custom_headers = custom_headers
        super().__init__(**kwargs)

    def execute(self, context: dict[str, Any]) -> None:
        recipients = send_email(
            self.to,
            self.subject,
            self.html_content,
            files=self.files,
            cc=self.cc,
            bcc=self.bcc,
            mime_subtype=self.mime_subtype,
            mime_charset=self.mime_charset,
            conn_id=self.conn_id,
            custom_headers=self.custom_headers,
            from_email=self.from_email,
        )
        print(f"sent the email {self.subject!r} to {', '.join(recipients)}")
