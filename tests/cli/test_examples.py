"""The example DAGs a newcomer gets: every file loads, and each shows what its docstring says.

They are run as a newcomer runs them (``tradewind dags test``, a process of its own), and their
task instances read back from the store.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest
from sqlalchemy import select

from state.core.db import session_scope
from state.core.models import TaskInstance
from tradewind.loader import DagBag
from tradewind.settings import get_settings

from .conftest import EXAMPLES, CliEnv

RunCli = Callable[..., subprocess.CompletedProcess[str]]

pytestmark = pytest.mark.timeout(300)


def test_every_example_loads() -> None:
    bag = DagBag.collect(EXAMPLES)
    assert bag.import_errors == {}
    assert set(bag.dags) == {
        "etl_example", "iterable_example", "runtime_example", "flaky_example", "mapping_example",
        "branch_example", "scheduled_example", "sensor_example", "pool_example", "large_example",
    }  # fmt: skip
    assert len(bag.dags["large_example"].tasks) == 400
    assert bag.dags["scheduled_example"].schedule == "@hourly"


def _states(run_cli: RunCli, dag_id: str, expect_code: int) -> dict[str, list[object]]:
    tested = run_cli("dags", "test", dag_id, "--run-id", "r1", timeout=240)
    assert tested.returncode == expect_code, tested.stdout + tested.stderr
    with session_scope(get_settings().sql_url) as session:
        rows = session.execute(
            select(TaskInstance.task_id, TaskInstance.map_index, TaskInstance.state,
                   TaskInstance.try_number).filter_by(dag_id=dag_id, run_id="r1")
        ).all()  # fmt: skip
    return {f"{task}[{index}]": [state, tries] for task, index, state, tries in rows}


def test_the_examples_end_as_their_docstrings_say(run_cli: RunCli, examples_env: CliEnv) -> None:
    assert _states(run_cli, "flaky_example", expect_code=1) == {
        "call_partner_api[-1]": ["failed", 3],
        "publish[-1]": ["upstream_failed", 0],
        "cleanup[-1]": ["success", 1],
    }
    assert _states(run_cli, "branch_example", expect_code=0) == {
        "choose[-1]": ["success", 1],
        "full_reload[-1]": ["skipped", 0],
        "incremental_load[-1]": ["success", 1],
        "report[-1]": ["success", 1],
    }
    mapped = _states(run_cli, "mapping_example", expect_code=0)
    assert sum(key.startswith("count_lines[") for key in mapped) == 7
    sensed = run_cli("dags", "test", "sensor_example", "--run-id", "r1", timeout=240)
    assert sensed.returncode == 0, sensed.stdout + sensed.stderr
    # It waited, its slot given back (at least one poke said not done; how many depends on how
    # fast the machine gets to them).
    assert "not done after poke 1" in sensed.stdout
    pooled = run_cli("dags", "test", "pool_example", "--run-id", "r1", timeout=240)
    assert "done result: 5 tables refreshed, two at a time" in pooled.stdout
