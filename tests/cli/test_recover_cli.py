"""``tasks clear`` with scopes, ``tasks mark`` and ``runs mark``: each names what changes first,
changes nothing with ``--dry-run`` or without an answer, and with ``--yes`` changes just that."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import select, update
from typer.testing import Result

from state.core.db import session_scope
from state.core.models import DagRun, TaskInstance
from tradewind.settings import get_settings

from .conftest import CliEnv

Cli = Callable[..., Result]


def _states() -> dict[str, str]:
    with session_scope(get_settings().sql_url) as session:
        rows = session.execute(select(TaskInstance.task_id, TaskInstance.state))
        return {task_id: str(state) for task_id, state in rows}


def _failed_second(cli: Cli) -> None:
    assert cli("dags", "trigger", "pair", "--run-id", "r1").exit_code == 0
    with session_scope(get_settings().sql_url) as session:
        session.execute(update(TaskInstance).values(state="success", try_number=1))
        session.execute(
            update(TaskInstance).where(TaskInstance.task_id == "second").values(state="failed")
        )
        session.execute(update(DagRun).values(state="failed"))


def test_tasks_clear_names_its_scope_then_asks(cli: Cli, env: CliEnv) -> None:
    _failed_second(cli)
    before = _states()
    dry = cli("tasks", "clear", "pair", "r1", "--task-id", "second", "--downstream", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert dry.output.splitlines() == [
        "2 task instances will be cleared:",
        "  pair r1 second: failed -> none",
        "  pair r1 third: success -> none",
    ]
    unanswered = cli("tasks", "clear", "pair", "r1", "--task-id", "second", "--downstream")
    assert unanswered.exit_code == 1
    assert "error: nothing changed (answer y, or pass --yes)" in unanswered.output
    only_failed = cli("tasks", "clear", "pair", "r1", "--only-failed", "--dry-run")
    assert "  pair r1 second: failed -> none" in only_failed.output
    assert "third" not in only_failed.output
    assert _states() == before

    done = cli("tasks", "clear", "pair", "r1", "--task-id", "second", "--downstream", "--yes")
    assert done.exit_code == 0, done.output
    assert done.output.splitlines()[-1] == "cleared 2 task instances of pair run r1"
    assert _states() == {"first": "success", "second": "none", "third": "none"}


def test_tasks_mark_and_runs_mark(cli: Cli, env: CliEnv) -> None:
    _failed_second(cli)
    marked = cli(
        "tasks", "mark", "pair", "r1", "skipped", "--task-id", "first", "--downstream", "-y"
    )
    assert marked.exit_code == 0, marked.output
    assert "3 task instances will be marked skipped:" in marked.output
    assert _states() == {"first": "skipped", "second": "skipped", "third": "skipped"}
    bad = cli("tasks", "mark", "pair", "r1", "running", "--task-id", "first")
    assert (bad.exit_code, bad.output) == (
        1,
        "error: a task instance is marked success, failed or skipped, not 'running'\n",
    )
    run = cli("runs", "mark", "pair", "success", "r1", "--yes")
    assert run.exit_code == 0, run.output
    assert run.output.splitlines()[0] == "pair run r1: queued -> success"
    assert run.output.splitlines()[-1] == "marked 1 run of pair success"
    with session_scope(get_settings().sql_url) as session:
        assert session.scalar(select(DagRun.state)) == "success"
