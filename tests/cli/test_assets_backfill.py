"""``tradewind dags backfill``, ``tradewind assets list/events``, and the one-line errors of bad
asset definitions."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from types import SimpleNamespace

import pytest
from sqlalchemy import select
from typer.testing import Result

from scheduler import loop
from scheduler.loop import Scheduler
from state.core.db import session_scope
from state.core.models import DagRun
from tradewind.settings import get_settings

from .conftest import CliEnv
from .test_db import one_error_line

Cli = Callable[..., Result]
RunCli = Callable[..., subprocess.CompletedProcess[str]]

DAILY = """
import datetime as dt
from tradewind import DAG, Asset, task

report = Asset("s3://reports/daily")

with DAG("daily", schedule="@daily", start_date=dt.datetime(2024, 1, 1), max_active_runs=2):
    task(lambda: None, task_id="work", outlets=[report])()

with DAG("on_report", schedule=[report]):
    task(lambda: None, task_id="read")()
"""


def runs(dag_id: str) -> list[tuple[str, str, str]]:
    with session_scope(get_settings().sql_url) as session:
        rows = session.execute(
            select(DagRun.run_id, DagRun.run_type, DagRun.state)
            .where(DagRun.dag_id == dag_id)
            .order_by(DagRun.data_interval_start)
        )
        return [(run_id, run_type, str(state)) for run_id, run_type, state in rows]


def test_backfill_creates_a_queued_run_per_interval_once(cli: Cli, env: CliEnv) -> None:
    (env.dags / "daily.py").write_text(DAILY)
    result = cli(
        "dags", "backfill", "daily", "--from-date", "2024-01-01", "--to-date", "2024-01-03"
    )
    assert result.exit_code == 0, result.output
    assert "backfill 1 of daily: 3 runs created" in result.stdout
    assert runs("daily") == [
        (f"backfill__2024-01-0{day}T00:00:00+00:00", "backfill", "queued") for day in (2, 3, 4)
    ]
    again = cli(
        "dags",
        "backfill",
        "daily",
        "--from-date",
        "2024-01-02",
        "--to-date",
        "2024-01-04",
        "--json",
    )
    document = json.loads(again.stdout)
    assert len(document["created"]) == 1 and len(document["existing"]) == 2
    assert document["backfill_id"] == 2  # each backfill is kept, the API lists them


def test_the_scheduler_starts_backfill_runs_within_max_active_runs(
    cli: Cli, env: CliEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    (env.dags / "daily.py").write_text(DAILY)
    cli("dags", "backfill", "daily", "--from-date", "2024-01-01", "--to-date", "2024-01-03")
    monkeypatch.setattr(loop, "publish_many", lambda app, ready: len(ready))
    scheduler = Scheduler(get_settings(), app=SimpleNamespace(main="stub"))  # type: ignore[arg-type]
    scheduler.run_once()
    states = sorted(state for _, run_type, state in runs("daily") if run_type == "backfill")
    assert states == ["queued", "running", "running"]  # max_active_runs=2


def test_backfill_refuses_bad_input_in_one_line(cli: Cli, env: CliEnv) -> None:
    (env.dags / "daily.py").write_text(DAILY)
    bad_date = cli("dags", "backfill", "daily", "--from-date", "soon", "--to-date", "2024-01-03")
    assert "--from-date 'soon' is not an ISO date" in one_error_line(bad_date)
    reversed_ = cli(
        "dags", "backfill", "daily", "--from-date", "2024-02-01", "--to-date", "2024-01-01"
    )
    assert "is before from date" in one_error_line(reversed_)
    unscheduled = cli(
        "dags", "backfill", "on_report", "--from-date", "2024-01-01", "--to-date", "2024-01-02"
    )
    assert "has no time schedule" in one_error_line(unscheduled)
    unknown = cli(
        "dags", "backfill", "nope", "--from-date", "2024-01-01", "--to-date", "2024-01-02"
    )
    assert "no DAG named 'nope'" in one_error_line(unknown)


def test_assets_list_and_events_show_what_a_run_recorded(run_cli: RunCli, env: CliEnv) -> None:
    (env.dags / "daily.py").write_text(DAILY)
    test = run_cli("dags", "test", "daily")
    assert test.returncode == 0, test.stderr
    listed = json.loads(run_cli("assets", "list", "--json").stdout)
    assert [(a["uri"], a["events"], a["consumers"]) for a in listed] == [
        ("s3://reports/daily", 1, ["on_report"])
    ]
    (event,) = json.loads(run_cli("assets", "events", "s3://reports/daily", "--json").stdout)
    assert (event["source_dag_id"], event["source_task_id"]) == ("daily", "work")
    shown = run_cli("runs", "show", "daily", event["source_run_id"])
    assert "asset event: s3://reports/daily" in shown.stdout


def test_an_invalid_asset_fails_its_dag_file_in_one_line(cli: Cli, env: CliEnv) -> None:
    (env.dags / "bad.py").write_text(
        "from tradewind import DAG, Asset, task\n"
        "with DAG('bad', schedule=[Asset('has a space')]):\n"
        "    task(lambda: None, task_id='t')()\n"
    )
    (env.dags / "bad_outlet.py").write_text(
        "from tradewind import DAG, task\n"
        "with DAG('bad_outlet'):\n"
        "    task(lambda: None, task_id='t', outlets=['s3://not/an/asset'])()\n"
    )
    document = json.loads(cli("dags", "list", "--json").stdout)
    errors = {e["fileloc"].rsplit("/", 1)[-1]: e["error"] for e in document["import_errors"]}
    assert "invalid asset uri 'has a space': ASCII without spaces only" in errors["bad.py"]
    assert "outlets hold Asset and AssetAlias objects" in errors["bad_outlet.py"]
