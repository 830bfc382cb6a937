"""The state store on object storage in real task runs: forked task processes, the real
supervisor (``worker.supervisor.execute.execute``), the helper process it starts at the first large
value, objects on ``file://``; on SQLite, and on PostgreSQL.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from state.core.db import get_engine, session_scope
from state.core.enums import DagRunState, TaskInstanceState
from state.core.models import DagRun, TaskStateValue, XCom
from state.core.objects import STATE_OBJECT_KEY
from state.engine.runs import clear_task_instances
from state.records.values import TIKey
from state.views.progress import items_progress
from tradewind.settings import reload_settings
from worker.state_store.purge import state_purger

from .iterable_support import Stack

DAGS = """
from pathlib import Path
from tradewind import dag, get_current_context, task

FOLDER = Path(__FOLDER__)
BIG = {"rows": ["x" * 100] * 50}


@task(retries=1, retry_delay=0)
def remember():
    context = get_current_context()
    store, ti = context["task_state_store"], context["ti"]
    if ti.try_number == 1:
        store.set("big", BIG)
        store.set("small", 1)
        raise RuntimeError("the first try fails after storing")
    assert store.get("big") == BIG and store.get("small") == 1
    return len(store.get("big")["rows"])


@dag(dag_id="remembering")
def remembering():
    remember()


remembering()


@task(retries=1, retry_delay=0, task_concurrency=4)
def blob(x):
    with open(FOLDER / "calls", "a") as out:
        out.write(f"{x}\\n")
    if x == 5 and get_current_context()["ti"].try_number == 1:
        raise ValueError("item 5 fails in try 1")
    return str(x) * 600


@task
def numbers():
    return list(range(8))


@task
def lengths(values):
    return [len(value) for value in values]


@dag(dag_id="blobs")
def blobs():
    lengths(blob.iterate(x=numbers()))


blobs()
"""


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def stack(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Stack]:
    # The helper process reads its settings from the environment, like a worker's processes.
    monkeypatch.setenv("TRADEWIND_STATE_STORE_BACKEND", "object_storage")
    monkeypatch.setenv("TRADEWIND_OBJECT_STORAGE_URL", f"file://{tmp_path}/objects")
    monkeypatch.setenv("TRADEWIND_STATE_STORE_MAX_VALUE_BYTES", "1000")
    reload_settings()
    url = request.getfixturevalue("pg_url") if request.param == "postgresql" else ""
    stack = Stack(tmp_path, url=url)
    stack.add_dag("dags", DAGS.replace("__FOLDER__", repr(str(tmp_path))))
    yield stack
    get_engine(stack.url).dispose()
    monkeypatch.undo()
    reload_settings()


def state_rows(stack: Stack, task_id: str) -> dict[str, object]:
    with session_scope(stack.url) as session:
        query = select(TaskStateValue.key, TaskStateValue.value)
        rows = session.execute(query.where(TaskStateValue.task_id == task_id))
        return {row.key: json.loads(row.value) for row in rows}


def objects_of(stack: Stack, dag_id: str, task_id: str) -> list[str]:
    folder = stack.home / "objects" / "state" / dag_id / "r1" / task_id / "-1"
    return sorted(path.name for path in folder.iterdir()) if folder.exists() else []


def test_a_large_value_round_trips_through_a_retry_and_a_clear_deletes_its_object(
    stack: Stack,
) -> None:
    run_pk = stack.trigger("remembering")

    assert stack.run_to_end(run_pk) == DagRunState.SUCCESS

    big = stack.home / "objects" / "state" / "remembering" / "r1" / "remember" / "-1" / "big"
    assert state_rows(stack, "remember") == {
        "big": {STATE_OBJECT_KEY: f"file://{big}", "bytes": 5160},
        "small": 1,
    }
    assert json.loads(big.read_text()) == {"rows": ["x" * 100] * 50}
    assert "started the backend helper process for XComs and state objects" in stack.log_of(
        "remember", 2
    )
    with session_scope(stack.url) as session:
        assert session.scalars(select(XCom.value)).one() == "50"
        run = session.scalars(select(DagRun)).one()
        clear_task_instances(session, run, purge_states=state_purger(stack.settings))
    assert not big.exists()
    assert state_rows(stack, "remember") == {}


def test_a_missing_object_fails_the_task_with_its_url(stack: Stack) -> None:
    run_pk = stack.trigger("remembering")
    stack.schedule(run_pk)
    stack.execute_queued(stop_after=("remember", 1))
    (big,) = (stack.home / "objects").rglob("big")  # stored by the first try
    big.unlink()

    assert stack.run_to_end(run_pk) == DagRunState.FAILED

    (ti,) = stack.task_instances("remember")
    missing = f"the object of state value 'big' of remembering/r1/remember is missing: file://{big}"
    assert ti.error is not None and missing in ti.error


def test_an_iterable_tasks_large_checkpoints_go_to_objects_and_serve_its_retry(
    stack: Stack,
) -> None:
    run_pk = stack.trigger("blobs")
    stack.schedule(run_pk)
    stack.execute_queued(stop_after=("blob", 1))

    # Two rounds of four outcomes (about 2.4 kB each round): both batches are objects.
    rows = state_rows(stack, "blob")
    assert all(STATE_OBJECT_KEY in rows[f"_iterable_batch_{n}"] for n in (0, 1))  # type: ignore[operator]
    assert objects_of(stack, "blobs", "blob") == ["_iterable_batch_0", "_iterable_batch_1"]
    # Progress reads what the rows keep of the batches: no object is read for it.
    with session_scope(stack.url) as session:
        (progress,) = items_progress(session, [TIKey("blobs", "r1", "blob")]).values()
    assert (progress.done, progress.failed, progress.total) == (7, 1, 8)

    assert stack.run_to_end(run_pk) == DagRunState.SUCCESS

    calls = Counter(int(line) for line in (stack.home / "calls").read_text().split())
    assert calls == Counter({**dict.fromkeys(range(8), 1), 5: 2})  # the retry ran item 5 only
    assert stack.ti_state("lengths") == TaskInstanceState.SUCCESS
    # A try that stores no large value starts no helper process.
    assert "helper" in stack.log_of("blob", 1) and "helper" not in stack.log_of("lengths", 1)
    # A success deletes the batches, and so their objects; the small marker stays in its row.
    assert list(state_rows(stack, "blob")) == ["_iterable_complete"]
    assert objects_of(stack, "blobs", "blob") == []
