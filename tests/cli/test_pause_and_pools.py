"""``tradewind dags pause/unpause`` and ``tradewind pools``, on a local Typer app (the commands
live in cli/pause.py and cli/pools.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from cli import pause, pools
from tests.state.harness import Home, tradewind_home

DAG = """
from tradewind import dag, task

@task
def work():
    pass

@dag(dag_id="hello")
def hello():
    work()

hello()
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    with tradewind_home(tmp_path, monkeypatch) as made:
        made.write_dag(DAG)
        made.sync()
        yield made


def cli() -> typer.Typer:
    app = typer.Typer()
    dags = typer.Typer()
    dags.command("pause")(pause.pause)
    dags.command("unpause")(pause.unpause)
    app.add_typer(dags, name="dags")
    app.add_typer(pools.app, name="pools")
    return app


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli(), list(args))
    return result.exit_code, result.output


def test_pause_and_unpause(home: Home) -> None:
    assert invoke("dags", "pause", "hello") == (0, "DAG hello paused\n")
    assert home.dag_model("hello").is_paused
    assert invoke("dags", "pause", "hello") == (0, "DAG hello paused (it was already paused)\n")
    assert invoke("dags", "unpause", "hello") == (0, "DAG hello unpaused\n")
    assert not home.dag_model("hello").is_paused
    code, out = invoke("dags", "pause", "nope")
    assert code == 1
    assert "no DAG named 'nope'" in out


def test_pools_set_list_and_delete(home: Home) -> None:
    assert invoke("pools", "set", "gpu", "4") == (0, "pool gpu: 4 slots\n")
    code, out = invoke("pools", "list", "--json")
    assert code == 0
    assert json.loads(out) == [
        {"name": "default_pool", "slots": 128, "in_use": 0},
        {"name": "gpu", "slots": 4, "in_use": 0},
    ]
    assert invoke("pools", "list")[1].splitlines()[2].split() == ["gpu", "4", "0"]
    assert invoke("pools", "set", "gpu", "-1")[0] == 2
    assert invoke("pools", "delete", "gpu") == (0, "pool gpu deleted\n")
    assert invoke("pools", "delete", "gpu")[0] == 1
    assert invoke("pools", "delete", "default_pool")[0] == 2
