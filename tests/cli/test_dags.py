"""``tradewind dags list / show / trigger`` and the one-line errors of bad input."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

import pytest
from sqlalchemy import select
from typer.testing import Result

from state.core.db import session_scope
from state.core.models import DagRun, TaskInstance
from tradewind.settings import get_settings

from .conftest import CliEnv
from .test_db import one_error_line

Cli = Callable[..., Result]
RunCli = Callable[..., subprocess.CompletedProcess[str]]


def break_a_file(env: CliEnv) -> None:
    (env.dags / "broken.py").write_text("from tradewind import dag\n\ndef oops(:\n")


def test_dags_list_shows_the_dags_and_each_broken_file(cli: Cli, env: CliEnv) -> None:
    break_a_file(env)

    result = cli("dags", "list")

    assert result.exit_code == 0, result.output
    assert "pair" in result.stdout
    assert str(env.dags / "pair.py") in result.stdout
    assert "Import errors" in result.stdout
    assert str(env.dags / "broken.py") in result.stdout
    assert "SyntaxError: invalid syntax (broken.py, line 3)" in result.stdout


def test_dags_list_json_is_machine_readable(cli: Cli, env: CliEnv) -> None:
    break_a_file(env)

    result = cli("dags", "list", "--json")

    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["dags"] == [
        {
            "dag_id": "pair",
            "fileloc": str(env.dags / "pair.py"),
            "tasks": 3,
            "is_paused": False,
            "schedule": None,
            "tags": [],
        }
    ]
    [error] = document["import_errors"]
    assert error["fileloc"] == str(env.dags / "broken.py")
    assert error["error"].startswith("SyntaxError")


def test_dags_show_prints_the_tree_of_tasks(cli: Cli, env: CliEnv) -> None:
    result = cli("dags", "show", "pair")

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "pair (3 tasks)",
        "└── first",
        "    ├── second  retries=1",
        # third depends on first and on second: it shows under both.
        "    │   └── third  trigger_rule=all_done",
        "    └── third  trigger_rule=all_done",
    ]


def test_dags_show_dot_is_graphviz(cli: Cli, env: CliEnv) -> None:
    result = cli("dags", "show", "pair", "--format", "dot")

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith('digraph "pair" {')
    edges = {line.strip() for line in result.stdout.splitlines() if "->" in line}
    assert edges == {'"first" -> "second";', '"first" -> "third";', '"second" -> "third";'}


def test_dags_show_of_an_unknown_dag_is_one_line(cli: Cli, env: CliEnv) -> None:
    result = cli("dags", "show", "nope")

    assert result.exit_code == 1
    assert "no DAG named 'nope'" in one_error_line(result)


def test_trigger_creates_a_queued_run_with_its_conf(cli: Cli, env: CliEnv) -> None:
    result = cli("dags", "trigger", "pair", "--run-id", "r1", "--conf", '{"x": 1}', "--json")

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"dag_id": "pair", "run_id": "r1", "state": "queued"}
    with session_scope(get_settings().sql_url) as session:
        run = session.scalars(select(DagRun).filter_by(dag_id="pair", run_id="r1")).one()
        assert run.conf == {"x": 1}
        tis = session.scalars(select(TaskInstance).filter_by(run_id="r1")).all()
        assert sorted(ti.task_id for ti in tis) == ["first", "second", "third"]

    again = cli("dags", "trigger", "pair", "--run-id", "r1")
    assert again.exit_code == 1
    assert "already has a run 'r1'" in one_error_line(again)


def test_trigger_of_an_unknown_dag_is_one_line_and_exit_1(run_cli: RunCli) -> None:
    result = run_cli("dags", "trigger", "nope")

    assert result.returncode == 1
    assert result.stderr == "error: no DAG named 'nope': see `tradewind dags list`\n"


def test_trigger_with_bad_conf_json_is_one_line_and_exit_2(cli: Cli, env: CliEnv) -> None:
    not_json = cli("dags", "trigger", "pair", "--conf", "{oops")
    assert not_json.exit_code == 2
    assert "--conf is not valid JSON" in one_error_line(not_json)

    not_an_object = cli("dags", "trigger", "pair", "--conf", "[1, 2]")
    assert not_an_object.exit_code == 2
    assert "--conf must be a JSON object, got list" in one_error_line(not_an_object)


def test_a_bad_setting_exits_2_naming_the_variable(run_cli: RunCli) -> None:
    result = run_cli("dags", "list", extra_env={"TRADEWIND_HEARTBEAT_SECONDS": "abc"})

    assert result.returncode == 2
    assert result.stderr.startswith("error: TRADEWIND_HEARTBEAT_SECONDS: ")
    assert len(result.stderr.splitlines()) == 1


def test_a_usage_mistake_is_one_line_and_exit_2(run_cli: RunCli) -> None:
    result = run_cli("dags", "show", "pair", "--format", "png")

    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("error: Invalid value for '--format'")


def test_a_run_is_shown_upstream_first_on_postgresql(
    cli: Cli, env: CliEnv, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # JSONB keeps an object's keys shortest first: the stored structure reads first, third, second.
    monkeypatch.setenv("TRADEWIND_DATABASE_URL", pg_url)
    assert cli("db", "migrate").exit_code == 0
    assert cli("dags", "trigger", "pair", "--run-id", "r1").exit_code == 0

    shown = cli("runs", "show", "pair", "r1", "--json")

    assert shown.exit_code == 0, shown.output
    rows = json.loads(shown.stdout)["task_instances"]
    assert [row["task_id"] for row in rows] == ["first", "second", "third"]


@pytest.mark.parametrize("run_id", ["..", "a/b", ""])
def test_trigger_refuses_a_run_id_that_could_leave_its_log_folder(
    cli: Cli, env: CliEnv, run_id: str
) -> None:
    result = cli("dags", "trigger", "pair", "--run-id", run_id)
    assert result.exit_code == 1
    assert "run id" in one_error_line(result)
    with session_scope(get_settings().sql_url) as session:
        assert session.scalars(select(DagRun).filter_by(dag_id="pair")).all() == []
