"""The command line records what it changes: the event log names the operating-system user, the
``cli`` way in and its host, and a run it triggers says ``triggered_by: cli``."""

from __future__ import annotations

import getpass
import json
import socket
from collections.abc import Callable

from sqlalchemy import select
from typer.testing import Result

from state.core.db import session_scope
from state.core.models import DagRun, EventLog
from tradewind.settings import get_settings

Cli = Callable[..., Result]


def test_commands_are_recorded_with_the_user_and_host(cli: Cli) -> None:
    for args in (
        ("dags", "trigger", "pair", "--run-id", "r1"),
        ("variables", "set", "api_key", "abc123"),
        ("tasks", "clear", "pair", "r1", "--task-id", "first", "--yes"),
        ("dags", "pause", "pair"),
    ):
        result = cli(*args)
        assert result.exit_code == 0, result.output
    with session_scope(get_settings().sql_url) as session:
        rows = session.scalars(select(EventLog).order_by(EventLog.id)).all()
        run = session.scalars(select(DagRun)).one()
        events = [(r.event, r.owner, r.origin, r.client, r.dag_id) for r in rows]
        extras = [r.extra or "" for r in rows]
        triggered = (run.triggered_by, run.triggering_user_name)
    me, host = getpass.getuser(), socket.gethostname()
    assert events == [
        ("trigger_dag_run", me, "cli", host, "pair"),
        ("post_variable", me, "cli", host, None),
        ("post_clear_task_instances", me, "cli", host, "pair"),
        ("patch_dag", me, "cli", host, "pair"),
    ]
    assert triggered == ("cli", me)
    assert "abc123" not in "".join(extras)
    assert json.loads(extras[2])["task_ids"] == ["first"]
