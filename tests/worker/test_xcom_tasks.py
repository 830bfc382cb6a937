"""XCom backends as Python tasks use them: the backend runs in the task process, the supervisor
stores the row it is sent; purges before a retry and on a clear; failures that name their cause.

Real forked task processes and a real supervisor (``worker.supervisor.execute.execute``), SQLite,
and object storage on ``file://`` (the backends' own tests cover S3).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from broker_config import message_of
from state.core.db import session_scope
from state.core.models import XCom
from state.engine.runs import clear_task_instances
from state.engine.scheduling import Enqueue
from tests.state.harness import Home, tradewind_home
from tests.worker.xcom_support import PIPELINE_DAG
from tradewind.settings import reload_settings
from worker.supervisor.execute import execute
from worker.supervisor.logs import log_path
from worker.xcom.object_storage import REFERENCE_KEY
from worker.xcom.purge import xcom_purger

DAGS = (
    PIPELINE_DAG
    + """

@task(retries=1, retry_delay=0)
def flaky():
    ti = get_current_context()["ti"]
    if ti.try_number == 1:
        ti.xcom_push("partial", ["y" * 100] * 10)
        raise RuntimeError("first try fails after a push")
    return "done"

@dag(dag_id="retry")
def retry():
    flaky()

retry()

@task
def refused():
    get_current_context()["ti"].xcom_push("bad", "anything")

@dag(dag_id="refusal")
def refusal():
    refused()

refusal()
"""
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    env = {
        "xcom_backend": "object_storage",
        "object_storage_url": f"file://{tmp_path}/objects",
        "xcom_object_threshold_bytes": "100",
        "heartbeat_seconds": "0.2",
    }
    with tradewind_home(tmp_path, monkeypatch, **env) as made:
        made.write_dag(DAGS)
        assert made.sync().import_errors == {}
        yield made


def run_all(home: Home, run_pk: int) -> list[str]:
    pending: list[Enqueue] = home.schedule(run_pk)
    outcomes = []
    while pending:
        outcomes.append(execute(message_of(pending.pop(0)), home.settings, pending.extend))
        pending = pending or home.schedule(run_pk)
    return outcomes


def rows(home: Home, task_id: str) -> dict[str, object]:
    with session_scope(home.url) as session:
        query = select(XCom.key, XCom.value).where(XCom.task_id == task_id)
        return {row.key: json.loads(row.value) for row in session.execute(query)}


def object_path(row: object) -> Path:
    assert isinstance(row, dict) and REFERENCE_KEY in row, row
    return Path(str(row[REFERENCE_KEY]).removeprefix("file://"))


def log_of(home: Home, run_pk: int, task_id: str, try_number: int) -> str:
    run = home.run(run_pk)
    folder = home.settings.logs_folder
    return log_path(folder, run.dag_id, run.run_id, task_id, -1, try_number).read_text()


def test_a_large_result_goes_to_storage_and_the_row_keeps_a_reference(home: Home) -> None:
    run_pk = home.trigger("pipeline")
    assert run_all(home, run_pk) == ["success", "success"]
    row = rows(home, "produce")["return_value"]
    path = object_path(row)
    assert path.parts[-5:] == ("pipeline", home.run(run_pk).run_id, "produce", "-1", "return_value")
    assert json.loads(path.read_text()) == {"rows": ["x" * 10] * 50}
    # The downstream task loaded the object in its own process; its small result stays inline.
    assert rows(home, "consume") == {"return_value": 50}


def test_a_missing_object_fails_the_pull_naming_its_path(home: Home) -> None:
    run_pk = home.trigger("pipeline")
    (produce,) = home.schedule(run_pk)
    queued: list[Enqueue] = []
    assert execute(message_of(produce), home.settings, queued.extend) == "success"
    path = object_path(rows(home, "produce")["return_value"])
    path.unlink()
    (consume,) = queued
    assert execute(message_of(consume), home.settings, lambda _: None) == "failed"
    error = home.ti(run_pk, "consume").error
    assert error is not None and f"is missing: file://{path}" in error
    assert rows(home, "consume") == {}


def test_a_value_the_backend_refuses_fails_the_push_and_stores_nothing(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRADEWIND_XCOM_BACKEND", "tests.worker.xcom_support.FailingBackend")
    home.settings = reload_settings()  # the task process reads the same settings
    run_pk = home.trigger("refusal")
    assert run_all(home, run_pk) == ["failed"]
    assert home.ti(run_pk, "refused").error == "ValueError: no place for 'bad'"
    assert rows(home, "refused") == {}


def test_what_a_failed_try_pushed_is_purged_before_the_retry_runs(home: Home) -> None:
    run_pk = home.trigger("retry")
    (first,) = home.schedule(run_pk)
    published: list[Any] = []
    assert execute(message_of(first), home.settings, published.extend) == "up_for_retry"
    partial = object_path(rows(home, "flaky")["partial"])
    assert partial.exists()

    (retry,) = published  # queued by the end's own pass: due at once
    assert execute(message_of(retry), home.settings, lambda _: None) == "success"
    assert not partial.exists()
    assert rows(home, "flaky") == {"return_value": "done"}
    log = log_of(home, run_pk, "flaky", 2)
    assert "started the backend helper process for XComs and state objects" in log
    assert "purged XCom 'partial' left by an earlier try" in log


def test_a_clear_purges_the_objects_of_the_xcoms_it_deletes(home: Home) -> None:
    run_pk = home.trigger("pipeline")
    assert run_all(home, run_pk) == ["success", "success"]
    path = object_path(rows(home, "produce")["return_value"])
    purge = xcom_purger(home.settings)
    assert purge is not None
    with session_scope(home.url) as session:
        assert clear_task_instances(session, home.run(run_pk), ["produce"], purge_xcoms=purge) == 1
    assert not path.exists()
    assert rows(home, "produce") == {}


def test_a_backend_name_that_does_not_import_fails_the_try_naming_the_variable(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRADEWIND_XCOM_BACKEND", "no_such_package.Backend")
    home.settings = reload_settings()
    run_pk = home.trigger("refusal")
    assert run_all(home, run_pk) == ["failed"]
    error = home.ti(run_pk, "refused").error
    assert error is not None
    assert error.startswith("TRADEWIND_XCOM_BACKEND='no_such_package.Backend': no_such_package")
    assert "does not import" in error
