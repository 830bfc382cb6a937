"""The event log: who did what, when and from where (Airflow's ``event_log``).

Every action a person takes (trigger, clear, mark, pause, a note, a change to a pool, variable,
connection or user, a sign-in, a refused one, a token issued) calls ``record_event`` in the same
transaction as its change: the row exists if and only if the change was committed. Who acts is
an ``Actor``: the signed-in user and the way in (``ui``, ``api``, ``cli``) with the client's
address; the CLI's actor is the operating-system user on its host, as Airflow's CLI records.

Event names are Airflow 3's, whatever the way in, so one filter finds an action however it was
taken: its REST routes' names (``trigger_dag_run``, ``clear_dag_run``,
``post_clear_task_instances``, ``patch_dag_run``, ``patch_task_instance``, ``patch_dag``,
``delete_dag_run``, ``post_pool``, ``patch_variable``, ``delete_connection``...), and for what
Airflow has no route of: ``login``, ``login_failed``, ``logout``, ``create_token``,
``create_token_failed``, ``create_user``, ``patch_user``, ``delete_user``.

``extra`` is JSON text and never holds a secret: a value under a key that names one (password,
secret, token, ``extra`` of a connection, a variable's value) is written as ``***``.
"""

from __future__ import annotations

import datetime as dt
import getpass
import json
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy.orm import Session

from state.core import EventLog, utcnow

Origin = Literal["ui", "api", "cli"]

#: How a run made by each way in says it was triggered (Airflow's ``DagRunTriggeredByType``).
TRIGGERED_BY: Mapping[str, str] = {"ui": "ui", "api": "rest_api", "cli": "cli"}

#: Words that name a secret in a key of ``extra``: its value is never written.
_SECRET_WORDS = ("password", "passwd", "secret", "token", "api_key", "private_key", "value")
_MASK = "***"
#: The longest text one value of ``extra`` keeps (a conf or a note is cut, never refused).
_MAX_VALUE_CHARS = 1000


@dataclass(frozen=True)
class Actor:
    """Who acts and from where: a user name (None: nobody signed in), the way in, the client."""

    user: str | None
    origin: Origin
    client: str | None = None

    @classmethod
    def cli(cls) -> Actor:
        """The command line's actor: the operating-system user on this host."""
        return cls(getpass.getuser(), "cli", socket.gethostname())

    @property
    def triggered_by(self) -> str:
        return TRIGGERED_BY[self.origin]


@dataclass(frozen=True)
class About:
    """What an event is about, as far as it is about a DAG, a run, a task instance or a try."""

    dag_id: str | None = None
    run_id: str | None = None
    task_id: str | None = None
    map_index: int | None = None
    try_number: int | None = None
    logical_date: dt.datetime | None = None


def record_event(
    session: Session,
    actor: Actor,
    event: str,
    about: About = About(),
    extra: Mapping[str, Any] | None = None,
) -> EventLog:
    """Add one row to the event log, in ``session``'s transaction (committed with the change)."""
    row = EventLog(
        dttm=utcnow(),
        event=event[:60],
        owner=actor.user[:500] if actor.user else None,
        origin=actor.origin,
        client=actor.client[:255] if actor.client else None,
        dag_id=about.dag_id,
        run_id=about.run_id,
        task_id=about.task_id,
        map_index=about.map_index,
        try_number=about.try_number,
        logical_date=about.logical_date,
        extra=_extra_text(extra),
    )
    session.add(row)
    return row


def _extra_text(extra: Mapping[str, Any] | None) -> str | None:
    if not extra:
        return None
    return json.dumps({str(key): _safe(str(key), value) for key, value in extra.items()})


def _safe(key: str, value: Any) -> Any:
    """``value`` as ``extra`` may keep it: masked under a key naming a secret, long text cut."""
    if any(word in key.lower() for word in _SECRET_WORDS):
        return _MASK
    if isinstance(value, Mapping):
        return {str(k): _safe(str(k), v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_safe(key, item) for item in value]
    if isinstance(value, str) and len(value) > _MAX_VALUE_CHARS:
        return value[:_MAX_VALUE_CHARS] + "…"
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)
