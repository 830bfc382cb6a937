"""``tradewind db clean``: old ended history goes with its XCom and state objects and its logs;
a dry run, a missing confirmation and a bad time change nothing."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from typer.testing import Result

from tests.state.history_seed import GONE, KEPT, object_path, runs_left, seed, table_counts
from tradewind.log_folders import run_log_folder

from .conftest import CliEnv

Cli = Callable[..., Result]


@pytest.fixture
def store(cli: Cli, env: CliEnv, monkeypatch: pytest.MonkeyPatch) -> str:
    """The CLI's SQLite store, migrated and seeded; XComs and state values in a file folder."""
    objects = env.home / "objects"
    monkeypatch.setenv("TRADEWIND_XCOM_BACKEND", "object_storage")
    monkeypatch.setenv("TRADEWIND_STATE_STORE_BACKEND", "object_storage")
    monkeypatch.setenv("TRADEWIND_OBJECT_STORAGE_URL", f"file://{objects}")
    assert cli("db", "migrate").exit_code == 0
    url = f"sqlite:///{env.home / 'tradewind.db'}"
    seed(url, objects)
    for dag_id, run_id, *_ in GONE + KEPT:
        log = run_log_folder(env.home / "logs", dag_id, run_id) / "a" / "-1" / "1.log"
        log.parent.mkdir(parents=True)
        log.write_text("a try's log\n")
    return url


def test_a_clean_deletes_old_runs_with_their_objects_and_logs(
    cli: Cli, env: CliEnv, store: str
) -> None:
    result = cli("db", "clean", "--older-than", "2026-06-01", "--dag-id", "old", "--yes")

    assert result.exit_code == 0, result.output
    assert "taken as UTC" in result.output
    # 2 runs, 6 TIs, 8 XComs, 8 states, 2 questions, 2 links, 2 events
    assert "deleted 30 rows" in result.output
    assert runs_left(store) == {(dag_id, run_id) for dag_id, run_id, *_ in KEPT}
    objects = env.home / "objects"
    for dag_id, run_id, *_ in GONE:
        assert not object_path(objects, "xcom", dag_id, run_id).exists()
        assert not object_path(objects, "state", dag_id, run_id).exists()
        assert not run_log_folder(env.home / "logs", dag_id, run_id).exists()
    for dag_id, run_id, *_ in KEPT:
        assert object_path(objects, "xcom", dag_id, run_id).exists()
        assert run_log_folder(env.home / "logs", dag_id, run_id).exists()


def test_a_dry_run_prints_the_counts_and_changes_nothing(cli: Cli, store: str) -> None:
    before = table_counts(store)

    result = cli("db", "clean", "--older-than", "2026-06-01T00:00:00+00:00", "--dry-run")

    assert result.exit_code == 0, result.output
    assert "taken as UTC" not in result.output
    assert "task_instance" in result.output and "│ 9 " in result.output  # 3 runs of 3 tasks
    assert "dry run: nothing deleted" in result.output
    assert table_counts(store) == before


def test_without_yes_and_no_terminal_it_refuses_in_one_line(cli: Cli, store: str) -> None:
    before = table_counts(store)

    result = cli("db", "clean", "--older-than", "2026-06-01")

    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == (
        "error: not deleting without confirmation: no terminal to ask on (pass --yes)"
    )
    assert table_counts(store) == before


@pytest.mark.parametrize("value", ["yesterday", "2026-13-01", ""])
def test_a_time_that_is_not_iso_is_one_line(cli: Cli, env: CliEnv, value: str) -> None:
    result = cli("db", "clean", "--older-than", value, "--yes")

    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert result.output.startswith(f"error: --older-than {value!r} is not an ISO date")
