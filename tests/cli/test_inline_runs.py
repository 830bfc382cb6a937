"""``dags test`` (a run in this process, through its retry), then ``runs show``, ``tasks logs``
and ``tasks clear`` on what it left in the store.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
import typer
from sqlalchemy import update

from cli.logs import follow_log, print_new, resolve_log
from state.core.db import session_scope
from state.core.models import TaskInstance
from tradewind.settings import get_settings
from worker.supervisor.logs import log_path

from .conftest import EXAMPLES, CliEnv, run_tradewind

RunCli = Callable[..., subprocess.CompletedProcess[str]]
RESULT = "report result: 5 orders worth 81.0 USD loaded; sent to the ops team"


@pytest.fixture(scope="module")
def tested(tmp_path_factory: pytest.TempPathFactory) -> tuple[CliEnv, str]:
    """One ``dags test etl_example --run-id r1`` for the read-only tests of this module."""
    cli_env = CliEnv(tmp_path_factory.mktemp("tested") / "home", EXAMPLES)
    conf = '{"recipient": "the ops team"}'
    done = run_tradewind(cli_env, "dags", "test", "etl_example", "--run-id", "r1", "--conf", conf)
    return cli_env, done.stdout + done.stderr


def test_dags_test_runs_the_example_through_its_retry(tested: tuple[CliEnv, str]) -> None:
    _, output = tested

    assert "transform try 1: up_for_retry  ConnectionError: exchange-rate service" in output
    assert "transform try 2: success" in output
    assert "stdout: loaded 5 orders, 81.0 USD" in output  # each try's log follows its line
    assert "etl_example r1: success" in output
    assert RESULT in output


def test_runs_show_json_lists_every_task_instance(tested: tuple[CliEnv, str]) -> None:
    cli_env, _ = tested

    shown = run_tradewind(cli_env, "runs", "show", "etl_example", "r1", "--json")

    assert shown.returncode == 0, shown.stderr
    document = json.loads(shown.stdout)
    assert (document["dag_id"], document["run_id"], document["state"]) == (
        "etl_example",
        "r1",
        "success",
    )
    assert document["run_type"] == "test"
    assert document["conf"] == {"recipient": "the ops team"}
    rows = document["task_instances"]
    assert [(r["task_id"], r["state"], r["try_number"]) for r in rows] == [
        ("extract", "success", 1),
        ("transform", "success", 2),
        ("load", "success", 1),
        ("report", "success", 1),
    ]
    assert all(r["map_index"] == -1 and r["duration_seconds"] > 0 for r in rows)
    assert all(r["error"] is None for r in rows)


def test_runs_show_of_an_unknown_run_is_one_line(tested: tuple[CliEnv, str]) -> None:
    cli_env, _ = tested

    shown = run_tradewind(cli_env, "runs", "show", "etl_example", "nope")

    assert shown.returncode == 1
    assert shown.stderr == "error: DAG 'etl_example' has no run 'nope'\n"


def test_tasks_logs_shows_the_error_of_the_first_try(tested: tuple[CliEnv, str]) -> None:
    cli_env, _ = tested

    first = run_tradewind(cli_env, "tasks", "logs", "etl_example", "r1", "transform", "--try", "1")
    latest = run_tradewind(cli_env, "tasks", "logs", "etl_example", "r1", "transform")

    assert first.returncode == 0, first.stderr
    assert "ConnectionError: exchange-rate service timed out" in first.stdout
    assert "try 1 ended up_for_retry" in first.stdout
    assert latest.returncode == 0, latest.stderr
    assert "try 2 ended success" in latest.stdout
    assert "ConnectionError" not in latest.stdout


def test_tasks_logs_of_a_try_that_never_ran_is_one_line(tested: tuple[CliEnv, str]) -> None:
    cli_env, _ = tested

    result = run_tradewind(cli_env, "tasks", "logs", "etl_example", "r1", "transform", "--try", "3")

    assert result.returncode == 1
    expected = "error: etl_example/r1/transform has had 2 tries: there is no try 3\n"
    assert result.stderr == expected


def test_tasks_clear_then_a_rerun_runs_only_what_was_cleared(
    run_cli: RunCli, examples_env: CliEnv
) -> None:
    assert run_cli("dags", "test", "etl_example", "--run-id", "r1").returncode == 0

    cleared = run_cli(
        "tasks", "clear", "etl_example", "r1", "--task-id", "load", "--task-id", "report", "--yes"
    )
    assert cleared.returncode == 0, cleared.stderr
    assert cleared.stdout.endswith("\ncleared 2 task instances of etl_example run r1\n")
    shown = json.loads(run_cli("runs", "show", "etl_example", "r1", "--json").stdout)
    assert shown["state"] == "queued"
    assert [r["state"] for r in shown["task_instances"]] == ["success", "success", "none", "none"]

    rerun = run_cli("dags", "test", "etl_example", "--run-id", "r1")
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "load try 2: success" in rerun.stdout
    assert "report try 2: success" in rerun.stdout
    assert "extract try" not in rerun.stdout
    assert "transform try" not in rerun.stdout

    finished = run_cli("dags", "test", "etl_example", "--run-id", "r1")
    assert finished.returncode == 1
    assert "already ended success" in finished.stderr


def test_tasks_clear_of_an_unknown_task_is_one_line(run_cli: RunCli, examples_env: CliEnv) -> None:
    assert run_cli("dags", "trigger", "etl_example", "--run-id", "r1").returncode == 0

    result = run_cli("tasks", "clear", "etl_example", "r1", "--task-id", "lod")

    assert result.returncode == 1
    assert result.stderr == "error: DAG 'etl_example' has no task 'lod'\n"


def test_tasks_logs_of_a_missing_file_is_one_line(run_cli: RunCli, examples_env: CliEnv) -> None:
    assert run_cli("dags", "test", "etl_example", "--run-id", "r1").returncode == 0
    path = log_path(examples_env.home / "logs", "etl_example", "r1", "extract", -1, 1)
    path.unlink()

    result = run_cli("tasks", "logs", "etl_example", "r1", "extract")

    assert result.returncode == 1
    assert result.stderr == f"error: no log for etl_example/r1/extract try 1 at {path}\n"


def test_follow_prints_the_log_as_it_grows_until_the_try_ends(
    cli: Callable[..., object], env: CliEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    cli("dags", "trigger", "pair", "--run-id", "r1")
    url = get_settings().sql_url
    set_first = update(TaskInstance).filter_by(run_id="r1", task_id="first")
    with session_scope(url) as session:
        session.execute(set_first.values(state="running", try_number=1))
    target = resolve_log(get_settings(), url, ("pair", "r1", "first", -1), None)
    append(target.path, "line one\n")

    def finish_the_try() -> None:
        time.sleep(1.0)
        append(target.path, "line two\n")
        with session_scope(url) as session:
            session.execute(set_first.values(state="success"))
        append(target.path, "the supervisor's last line\n")

    writer = threading.Thread(target=finish_the_try)
    writer.start()
    follow_log(url, target)
    writer.join()

    assert capsys.readouterr().out == "line one\nline two\nthe supervisor's last line\n"


def test_follow_waits_for_a_try_not_started_yet(
    cli: Callable[..., object], env: CliEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    cli("dags", "trigger", "pair", "--run-id", "r1")
    url = get_settings().sql_url
    set_first = update(TaskInstance).filter_by(run_id="r1", task_id="first")

    def start_the_try() -> None:
        time.sleep(1.0)
        with session_scope(url) as session:
            session.execute(set_first.values(state="running", try_number=1))

    starter = threading.Thread(target=start_the_try)
    starter.start()
    target = resolve_log(get_settings(), url, ("pair", "r1", "first", -1), None, wait=True)
    starter.join()

    assert target.try_number == 1
    assert "(waiting for try 1 of pair/r1/first: " in capsys.readouterr().err
    with session_scope(url) as session:
        session.execute(set_first.values(state="upstream_failed", try_number=0))
    with pytest.raises(typer.Exit):
        resolve_log(get_settings(), url, ("pair", "r1", "first", -1), None, wait=True)
    assert capsys.readouterr().err == "error: pair/r1/first ended upstream_failed without a try 1\n"


def append(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as log_file:
        log_file.write(text)


def test_a_large_log_is_printed_whole_a_mib_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "1.log"
    text = "".join(f"line {n:07} é\n" for n in range(600_000)) + "the end, no newline"
    path.write_text(text)
    size = len(text.encode())
    del text
    with (tmp_path / "out.txt").open("w", encoding="utf-8") as out:
        monkeypatch.setattr(sys, "stdout", out)
        tracemalloc.start()
        try:
            assert print_new(path, 0) == size
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert (tmp_path / "out.txt").read_bytes() == path.read_bytes()
    assert size > 9 * 1024 * 1024 and peak < 4 * 1024 * 1024  # read whole, it is 9 MiB at once
