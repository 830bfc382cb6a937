"""A malformed DAG is a clear import error for that DAG, recorded at sync; nothing else is touched.

Cycles, unknown dependencies, duplicate task ids and invalid schedules are caught when the file
is imported (the whole file fails, as in Airflow); a pool that does not exist is caught at sync,
against the store, and refuses only the DAG that names it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from state.core.db import session_scope
from state.core.models import DagImportError, DagModel
from state.engine.pools import set_pool
from tests.state.harness import Home, tradewind_home

HEADER = """
from tradewind import DAG, dag, task

@task
def work():
    pass
"""

FILES = {
    "good.py": """
@dag(dag_id="good")
def good():
    work() >> work()

good()
""",
    "cycle.py": """
with DAG("cyclic"):
    a = work.override(task_id="a")()
    b = work.override(task_id="b")()
    a >> b
    b >> a
""",
    "unknown.py": """
with DAG("orphan") as d:
    a = work.override(task_id="a")()
a.task.upstream_task_ids.add("ghost")
""",
    # TaskFlow calls get unique ids (t, t__1...); two tasks added under one id are an error.
    "duplicate.py": """
from tradewind.task import Task, TaskOptions

with DAG("twins") as twins:
    pass
twins.add_task(Task("same", None, TaskOptions()))
twins.add_task(Task("same", None, TaskOptions()))
""",
    "cron.py": """
@dag(dag_id="badcron", schedule="0 25 * * *")
def badcron():
    work()

badcron()
""",
    "pools.py": """
@dag(dag_id="pooled")
def pooled():
    work.override(pool="gpu")()

pooled()

@dag(dag_id="neighbour")
def neighbour():
    work()

neighbour()
""",
}

EXPECTED = {
    "cycle.py": "DagDefinitionError: DAG cyclic has a cycle: ",
    "unknown.py": "DagDefinitionError: DAG orphan: task a depends on unknown task(s) ['ghost']",
    "cron.py": "DagDefinitionError: DAG badcron: invalid cron expression '0 25 * * *'",
    "duplicate.py": "DagDefinitionError: DAG twins: duplicate task id 'same'",
    "pools.py": "DAG pooled: pool 'gpu' does not exist (create it with `tradewind pools set gpu",
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    with tradewind_home(tmp_path, monkeypatch) as made:
        for name, body in FILES.items():
            made.write_dag(HEADER + body, name=name)
        yield made


def errors(home: Home) -> dict[str, str]:
    with session_scope(home.url) as session:
        rows = session.scalars(select(DagImportError))
        return {Path(row.fileloc).name: row.error for row in rows}


def stored(home: Home) -> set[str]:
    with session_scope(home.url) as session:
        return set(session.scalars(select(DagModel.dag_id).where(DagModel.is_active)))


def test_each_bad_dag_is_an_import_error_and_the_good_ones_are_stored(home: Home) -> None:
    result = home.sync()
    found = errors(home)
    assert set(found) == {"cycle.py", "unknown.py", "duplicate.py", "cron.py", "pools.py"}
    for name, start in EXPECTED.items():
        assert found[name].startswith(start), found[name]
    assert stored(home) == {"good", "neighbour"}
    assert set(result.dags) == {"good", "neighbour"}
    assert "\n" not in "".join(found.values())  # one line each: `tradewind dags list` shows it


def test_creating_the_missing_pool_lets_the_dag_in_at_the_next_sync(home: Home) -> None:
    home.sync()
    with session_scope(home.url) as session:
        set_pool(session, "gpu", 2)
    home.sync()
    assert "pools.py" not in errors(home)
    assert stored(home) == {"good", "neighbour", "pooled"}


def test_a_dag_that_turns_bad_keeps_its_last_good_version(home: Home) -> None:
    with session_scope(home.url) as session:
        set_pool(session, "gpu", 2)
    home.sync()
    before = home.dag_model("pooled").version_hash
    pools = home.dags / "pools.py"
    pools.write_text(pools.read_text().replace('pool="gpu"', 'pool="tpu"'))
    home.sync()
    assert errors(home)["pools.py"].startswith("DAG pooled: pool 'tpu' does not exist")
    assert home.dag_model("pooled").version_hash == before
    assert stored(home) == {"good", "neighbour", "pooled"}
