"""Airflow's ``XCom`` model as providers use it in a task (an operator link's ``persist`` and
``get_value``): this run's XComs through the supervisor, another run's refused in one line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.state.harness import Home
from tests.worker.test_supervisor import run_tries, start, supervised_home

DAGS = """
from types import SimpleNamespace

from airflow.models.xcom import XCom
from airflow.sdk import DAG, task


@task
def region():
    return {{"region_name": "eu-west-1"}}


@task
def link(dag_run=None, ti=None):
    XCom.set("link", "console", dag_id=ti.dag_id, task_id=ti.task_id, run_id=ti.run_id)
    key = SimpleNamespace(dag_id=ti.dag_id, run_id=ti.run_id, task_id="region", map_index=-1)
    try:
        XCom.get_one(dag_id=ti.dag_id, run_id="another", task_id="region")
    except ValueError as error:
        refused = str(error)
    return [XCom.get_value(ti_key=key), XCom.get_one(task_id="link", key="link"), refused]


with DAG("links"):
    region() >> link()
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    with supervised_home(tmp_path, monkeypatch, DAGS) as made:
        yield made


def test_a_task_reads_its_runs_xcoms_and_sets_its_own_through_airflows_xcom(home: Home) -> None:
    run_pk, pending = start(home, "links")

    assert run_tries(home, run_pk, pending) == ["success", "success"]

    value, own, refused = json.loads(home.xcoms(run_pk)[("link", "return_value")])
    assert value == {"region_name": "eu-west-1"}
    assert own == "console"
    assert refused.startswith("XCom of links/another: a task reads the XComs of its own run only")
