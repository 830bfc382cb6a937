"""The cross-DAG operators in a real fleet (PostgreSQL + Redis): a controller's
``TriggerDagRunOperator(wait_for_completion=True)`` triggers a target DAG at its own logical
date while a watcher DAG's ``ExternalTaskSensor`` (reschedule mode) waits on the target's task
at the same date; both end in success. A target that fails fails the trigger (failed_states).
"""

from __future__ import annotations

import datetime as dt
import textwrap
from pathlib import Path

import pytest

from state.core.db import session_scope
from state.engine.runs import create_run

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

WHEN = dt.datetime(2026, 3, 4, 5, 6, 7, tzinfo=dt.UTC)

CROSS_DAGS = """
import time

from tradewind import DAG, Param, task
from tradewind.standard.external_task import ExternalTaskSensor
from tradewind.standard.trigger_dagrun import TriggerDagRunOperator


@task
def work(params=None):
    time.sleep(3)  # long enough for the watcher to poke in vain first
    return params["x"]


@task
def broken():
    raise RuntimeError("the target broke")


with DAG("target", params={"x": Param(0, type="integer")}):
    work()

with DAG("failing_target"):
    broken()

with DAG("controller"):
    TriggerDagRunOperator(
        task_id="trigger",
        trigger_dag_id="{{ params.target }}",
        trigger_run_id="{{ run_id }}__child",
        logical_date="{{ logical_date.isoformat() }}",
        conf="{{ params.payload | tojson }}",
        wait_for_completion=True,
        poke_interval=0.5,
        failed_states=["failed"],
    )

with DAG("watcher"):
    ExternalTaskSensor(
        task_id="wait",
        external_dag_id="target",
        external_task_id="work",
        mode="reschedule",
        poke_interval=1,
        timeout=120,
    )
"""


@pytest.fixture
def cross_fleet(make_fleet, tmp_path: Path):
    dags = tmp_path / "cross_dags"
    dags.mkdir()
    (dags / "cross.py").write_text(textwrap.dedent(CROSS_DAGS))
    fleet = make_fleet(dags)
    fleet.start_worker(concurrency=3)
    fleet.start_scheduler()
    return fleet


def run_at(fleet, dag_id: str, run_id: str, conf: dict[str, object]) -> None:
    from scheduler.dag_sync import sync_dags

    with session_scope(fleet.url) as session:
        sync_dags(session, Path(fleet.env["TRADEWIND_DAGS_FOLDER"]))
        create_run(session, dag_id, run_id=run_id, conf=conf, data_interval=(WHEN, WHEN))


def test_a_trigger_waits_for_its_run_while_a_rescheduled_sensor_waits_on_it(cross_fleet) -> None:
    fleet = cross_fleet
    run_at(fleet, "watcher", "w1", {})
    run_at(fleet, "controller", "c1", {"target": "target", "payload": {"x": 7}})

    assert fleet.wait_run("controller", "c1", timeout=150) == "success"
    assert fleet.wait_run("watcher", "w1", timeout=60) == "success"
    assert fleet.run_state("target", "c1__child") == "success"

    assert fleet.xcom("controller", "c1", "trigger", "trigger_run_id") == '"c1__child"'
    assert fleet.xcom("target", "c1__child", "work") == "7"  # the conf reached the run
    wait = fleet.task_instances("watcher", "w1")["wait"]
    assert (str(wait.state), wait.try_number) == ("success", 1)
    log = (fleet.home / "logs" / "watcher" / "w1" / "wait" / "-1" / "1.log").read_text()
    assert "try 1 ended up_for_reschedule" in log  # it held no slot between pokes
    trigger_log = fleet.home / "logs" / "controller" / "c1" / "trigger" / "-1" / "1.log"
    assert "target run c1__child is success" in trigger_log.read_text()


def test_a_triggered_run_that_fails_fails_the_trigger(cross_fleet) -> None:
    fleet = cross_fleet
    run_at(fleet, "controller", "c2", {"target": "failing_target", "payload": {}})

    assert fleet.wait_run("controller", "c2", timeout=150) == "failed"
    assert fleet.run_state("failing_target", "c2__child") == "failed"
    trigger = fleet.task_instances("controller", "c2")["trigger"]
    assert trigger.error == (
        "TriggeredRunFailed: failing_target run c2__child ended failed, one of failed_states"
    )


def test_a_conf_that_breaks_the_target_s_params_fails_the_trigger_in_one_line(
    cross_fleet,
) -> None:
    fleet = cross_fleet
    run_at(fleet, "controller", "c3", {"target": "target", "payload": {"x": "seven"}})

    assert fleet.wait_run("controller", "c3", timeout=150) == "failed"
    trigger = fleet.task_instances("controller", "c3")["trigger"]
    assert trigger.error is not None and "\n" not in trigger.error
    assert "DAG 'target'" in trigger.error and "x" in trigger.error
    assert fleet.task_instances("target", "c3__child") == {}  # no run was created
