"""Clear and mark with scopes through the API, driven by Airflow's own client (3.3.2).

A real server (uvicorn in a thread, on a SQLite home) answers ``apache-airflow-client``:
``clearTaskInstances`` with downstream, past, only-failed and ``[task_id, map_index]`` pairs,
dry runs first; the task and task-group ``PATCH`` dry runs; the bulk routes of task instances
and runs, and ``clearDagRuns``. The scope computation itself is tested in
``tests/state/test_recover.py`` on SQLite and PostgreSQL.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
import urllib.request
from collections.abc import Iterator

import airflow_client.client as airflow
import pytest
import uvicorn
from sqlalchemy import select, update

from api import create_app
from api.security import hash_password
from state.core.db import session_scope
from state.core.enums import DagRunState
from state.core.models import DagRun, TaskInstance
from state.engine.runs import create_run
from state.records.users import Role, create_user
from tests.state.harness import TI, Home, tradewind_home
from tests.ui.conftest import _free_port

Task = airflow.ClearTaskInstancesBodyTaskIdsInner
PASSWORD = "correct horse battery staple"
DAY = dt.datetime(2026, 5, 1, tzinfo=dt.UTC)
DAGS = """
from tradewind import DAG, task, task_group


@task
def step():
    pass


with DAG("chain"):
    a = step.override(task_id="a")()
    b = step.override(task_id="b")()
    c = step.override(task_id="c")()

    @task_group(group_id="g")
    def g():
        step.override(task_id="x")() >> step.override(task_id="y")()

    a >> b >> c >> g()
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Home, airflow.ApiClient]]:
    """One server for the module; each test resets the states it reads."""
    folder = tmp_path_factory.mktemp("recover")
    with pytest.MonkeyPatch.context() as monkeypatch, tradewind_home(folder, monkeypatch) as home:
        home.write_dag(DAGS)
        home.sync()
        with session_scope(home.url) as session:
            create_user(session, "op", hash_password(PASSWORD), Role.USER)
            for day, run_id in enumerate(["r1", "r2", "r3"]):
                when = DAY + dt.timedelta(days=day)
                create_run(session, "chain", run_id=run_id, data_interval=(when, when))
        yield home, _serve(home)


def _serve(home: Home) -> airflow.ApiClient:
    port = _free_port()
    config = uvicorn.Config(
        create_app(home.settings),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        ws="none",
        lifespan="off",
    )
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, name="recover-api", daemon=True).start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert time.monotonic() < deadline, "the API server did not start"
        time.sleep(0.05)
    base = f"http://127.0.0.1:{port}"
    body = json.dumps({"username": "op", "password": PASSWORD}).encode()
    request = urllib.request.Request(
        f"{base}/auth/token", body, {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        access = json.loads(reply.read())["access_token"]
    return airflow.ApiClient(airflow.Configuration(host=base, access_token=access))


@pytest.fixture
def chain(served: tuple[Home, airflow.ApiClient]) -> tuple[Home, airflow.ApiClient]:
    """Every task instance succeeded, every run failed; then b failed and c upstream_failed in
    r2, c failed in r1."""
    home, client = served
    with session_scope(home.url) as session:
        session.execute(update(TaskInstance).values(state=TI.SUCCESS))
        session.execute(update(DagRun).values(state=DagRunState.FAILED))
        for run_id, task_id, state in [
            ("r2", "b", TI.FAILED),
            ("r2", "c", TI.UPSTREAM_FAILED),
            ("r1", "c", TI.FAILED),
        ]:
            session.execute(
                update(TaskInstance)
                .where(TaskInstance.run_id == run_id, TaskInstance.task_id == task_id)
                .values(state=state)
            )
    return home, client


def _keys(tis: list[airflow.TaskInstanceResponse]) -> list[tuple[str, str]]:
    return sorted((ti.dag_run_id, ti.task_id) for ti in tis)


def _states(home: Home) -> dict[tuple[str, str], str]:
    with session_scope(home.url) as session:
        rows = session.execute(
            select(TaskInstance.run_id, TaskInstance.task_id, TaskInstance.state)
        )
        return {(run_id, task_id): str(state) for run_id, task_id, state in rows}


def test_clear_task_instances_with_scopes_dry_run_first(
    chain: tuple[Home, airflow.ApiClient],
) -> None:
    home, client = chain
    tis = airflow.TaskInstanceApi(client)
    before = _states(home)
    body = airflow.ClearTaskInstancesBody(
        dag_run_id="r2", task_ids=[Task("b")], include_downstream=True, only_failed=True
    )
    dry = tis.post_clear_task_instances("chain", body)
    assert _keys(dry.task_instances) == [("r2", "b"), ("r2", "c")]
    assert _states(home) == before  # a dry run (the default) changes nothing
    everything = airflow.ClearTaskInstancesBody(
        dag_run_id="r2", task_ids=[Task("b")], include_downstream=True, only_failed=False
    )
    assert _keys(tis.post_clear_task_instances("chain", everything).task_instances) == [
        ("r2", "b"), ("r2", "c"), ("r2", "g.x"), ("r2", "g.y"),
    ]  # fmt: skip
    past = airflow.ClearTaskInstancesBody(
        dag_run_id="r2", task_ids=[Task(["c", -1])], include_past=True, only_failed=True
    )
    assert _keys(tis.post_clear_task_instances("chain", past).task_instances) == [
        ("r1", "c"),
        ("r2", "c"),
    ]
    window = airflow.ClearTaskInstancesBody(
        task_ids=[Task("a")], start_date=DAY + dt.timedelta(days=1), only_failed=False
    )
    assert _keys(tis.post_clear_task_instances("chain", window).task_instances) == [
        ("r2", "a"),
        ("r3", "a"),
    ]

    body.dry_run = False
    done = tis.post_clear_task_instances("chain", body)
    assert [(ti.task_id, ti.state) for ti in done.task_instances] == [("b", None), ("c", None)]
    after = _states(home)
    assert (after[("r2", "b")], after[("r2", "c")], after[("r1", "c")]) == (
        "none",
        "none",
        "failed",
    )
    run = airflow.DagRunApi(client).get_dag_run("chain", "r2")
    assert run.state.value == "queued"  # reset_dag_runs: the scheduler runs them again


def test_mark_dry_runs_for_a_task_and_a_group(chain: tuple[Home, airflow.ApiClient]) -> None:
    home, client = chain
    tis = airflow.TaskInstanceApi(client)
    body = airflow.PatchTaskInstanceBody(new_state="success", include_downstream=True)
    dry = tis.patch_task_instance_dry_run("chain", "r2", "b", body)
    assert _keys(dry.task_instances) == [("r2", "b"), ("r2", "c")]  # g.x, g.y: success already
    failed = airflow.PatchTaskInstanceBody(new_state="failed")
    group = tis.patch_task_group_instances_dry_run("chain", "r3", "g", failed)
    assert _keys(group.task_instances) == [("r3", "g.x"), ("r3", "g.y")]
    assert _states(home)[("r3", "g.x")] == "success"
    marked = tis.patch_task_instance(
        "chain", "r1", "c", airflow.PatchTaskInstanceBody(new_state="success", include_future=True)
    )
    assert _keys(marked.task_instances) == [("r1", "c"), ("r2", "c")]  # r3's c: success already


def test_bulk_task_instances_and_runs(chain: tuple[Home, airflow.ApiClient]) -> None:
    home, client = chain
    update_tis = airflow.BulkUpdateActionBulkTaskInstanceBody(
        action="update",
        entities=[
            airflow.BulkTaskInstanceBody(task_id="b", new_state="success"),
            airflow.BulkTaskInstanceBody(task_id="nope", new_state="success"),
        ],
    )
    body = airflow.BulkBodyBulkTaskInstanceBody(actions=[airflow.ActionsInner1(update_tis)])
    answer = airflow.TaskInstanceApi(client).bulk_task_instances("chain", "r2", body)
    assert answer.update.success == ["chain.r2.b[-1]"]
    assert "has no task 'nope'" in answer.update.errors[0]["error"]

    runs = airflow.DagRunApi(client)
    marks = airflow.BulkUpdateActionBulkDAGRunBody(
        action="update",
        entities=[airflow.BulkDAGRunBody(dag_run_id=r, state="success") for r in ("r1", "r3")],
    )
    body_runs = airflow.BulkBodyBulkDAGRunBody(actions=[airflow.ActionsInner(marks)])
    assert sorted(runs.bulk_dag_runs("chain", body_runs).update.success) == ["chain.r1", "chain.r3"]
    assert runs.get_dag_run("chain", "r1").state.value == "success"
    assert _states(home)[("r1", "c")] == "failed"  # a run's mark moves its unfinished ones only

    clear = airflow.BulkDAGRunClearBody(
        dag_runs=[airflow.BulkDAGRunBody(dag_run_id="r2")], only_failed=True
    )
    # Read as JSON: the client's own oneOf (TaskInstanceResponse | NewTaskResponse) cannot
    # tell a task instance from a new task (both match), whatever server answers.
    raw = runs.clear_dag_runs_without_preload_content("chain", clear)
    dry = json.loads(raw.data)["task_instances"]
    assert [(ti["dag_run_id"], ti["task_id"]) for ti in dry] == [("r2", "c")]  # b: success now
    clear.dry_run = False
    done = runs.clear_dag_runs("chain", clear).actual_instance
    assert [run.dag_run_id for run in done.dag_runs] == ["r2"]
    assert _states(home)[("r2", "c")] == "none"
