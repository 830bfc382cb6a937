"""``tradewind tasks clear`` with the state store on object storage: the objects go with the state.

The run and its state are made by hand (a row that refers to a file object); the command runs in
this process.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import update
from typer.testing import Result

from state.core.db import session_scope
from state.core.models import TaskInstance, TaskStateValue
from state.core.objects import STATE_OBJECT_KEY

from .conftest import CliEnv

Cli = Callable[..., Result]


@pytest.mark.parametrize(("flags", "kept"), [((), False), (("--keep-state",), True)])
def test_a_clear_deletes_the_objects_of_the_state_it_discards(
    cli: Cli,
    env: CliEnv,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    flags: tuple[str],
    kept: bool,
) -> None:
    monkeypatch.setenv("TRADEWIND_STATE_STORE_BACKEND", "object_storage")
    monkeypatch.setenv("TRADEWIND_OBJECT_STORAGE_URL", f"file://{tmp_path}/objects")
    assert cli("dags", "trigger", "pair", "--run-id", "r1").exit_code == 0
    big = tmp_path / "objects" / "state" / "pair" / "r1" / "first" / "-1" / "big"
    big.parent.mkdir(parents=True)
    big.write_text('"stored"')
    with session_scope(f"sqlite:///{env.home / 'tradewind.db'}") as session:
        row = {STATE_OBJECT_KEY: f"file://{big}", "bytes": 8}
        session.add(
            TaskStateValue(
                dag_id="pair", run_id="r1", task_id="first", key="big", value=json.dumps(row)
            )
        )
        session.execute(update(TaskInstance).values(state="success"))

    result = cli("tasks", "clear", "pair", "r1", "--task-id", "first", "--yes", *flags)

    assert result.exit_code == 0, result.output
    assert big.exists() is kept
