"""The fleet end to end: real scheduler and Celery worker processes on real services."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


@pytest.fixture(params=["postgres+redis", "embedded"])
def any_fleet(request: pytest.FixtureRequest):
    return request.getfixturevalue(
        "fleet" if request.param == "postgres+redis" else "embedded_fleet"
    )


def test_xcoms_flow_through_a_retry_to_success(any_fleet) -> None:
    any_fleet.start_worker()
    any_fleet.start_scheduler()
    any_fleet.trigger("xcom_pipeline", "r1")

    assert any_fleet.wait_run("xcom_pipeline", "r1") == "success"
    states = any_fleet.task_states("xcom_pipeline", "r1")
    assert states["square"] == ("success", 2)
    assert {state for state, _ in states.values()} == {"success"}
    assert json.loads(any_fleet.xcom("xcom_pipeline", "r1", "describe")) == "sum of 5 squares is 55"


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):  # gone before the open, or during the read
        return False
    return "State:\tZ" not in status


def test_execution_timeout_kills_the_task_and_its_children(fleet, tmp_path: Path) -> None:
    # The supervisor's timeout is under test, not the zombie rule: on a loaded machine a try's
    # heartbeats can lag past the fleet's 4 s threshold, and the try would be given up instead.
    fleet.env["TRADEWIND_ZOMBIE_THRESHOLD_SECONDS"] = "30"
    fleet.start_worker()
    fleet.start_scheduler()
    pid_file = tmp_path / "grandchild.pid"
    fleet.trigger("timeout_dag", "r1", conf={"pid_file": str(pid_file)})

    assert fleet.wait_run("timeout_dag", "r1") == "success"
    assert fleet.task_states("timeout_dag", "r1")["stuck"] == ("success", 2)
    fleet.wait_for(lambda: not _alive(int(pid_file.read_text())), 10, "the grandchild to be gone")
    log = (tmp_path / "logs" / "timeout_dag" / "r1" / "stuck" / "-1" / "1.log").read_text()
    assert "execution_timeout of 2s exceeded" in log


@pytest.mark.parametrize("pool", ["threads", "prefork"])
def test_supervisor_killed_mid_task_is_recovered_by_the_zombie_rule(
    fleet, tmp_path: Path, pool: str
) -> None:
    """On the threads pool the supervisor is the worker: a worker started after it runs the
    retry. On prefork it is a pool process, which Celery replaces."""
    fleet.start_worker(pool=pool)
    fleet.start_scheduler()
    marker = tmp_path / "tries.txt"
    fleet.trigger("slow_dag", "r1", conf={"marker": str(marker), "sleep": 60})
    fleet.wait_for(lambda: marker.exists() and marker.read_text().strip(), 30, "the first try")
    supervisor_pid = fleet.task_instances("slow_dag", "r1")["slow"].pid
    task_pid = int(marker.read_text().split()[1])

    os.kill(supervisor_pid, signal.SIGKILL)
    if pool == "threads":
        fleet.start_worker("w2")

    assert fleet.wait_run("slow_dag", "r1", timeout=90) == "success"
    ti = fleet.task_instances("slow_dag", "r1")["slow"]
    assert ti.try_number == 2
    assert [line.split()[0] for line in marker.read_text().splitlines()] == ["1", "2"]
    # The orphaned task of the killed supervisor did not go on running beside the retry.
    assert not _alive(task_pid)


def test_a_duplicate_message_does_not_run_a_try_twice(fleet, tmp_path: Path) -> None:
    from broker_config import make_celery_app, publish_many
    from state.engine.scheduling import Enqueue

    fleet.start_worker(concurrency=2)
    fleet.start_scheduler()
    marker = tmp_path / "tries.txt"
    fleet.trigger("slow_dag", "r1", conf={"marker": str(marker), "sleep": 3})
    fleet.wait_for(lambda: marker.exists() and marker.read_text().strip(), 30, "the first try")
    ti = fleet.task_instances("slow_dag", "r1")["slow"]

    app = make_celery_app(fleet.env["TRADEWIND_BROKER_URL"], tmp_path / "broker")
    duplicate = Enqueue(
        ti.id, ti.try_number, ti.dag_id, ti.run_id, ti.task_id, ti.map_index, ti.queue
    )
    publish_many(app, [duplicate])

    assert fleet.wait_run("slow_dag", "r1") == "success"
    fleet.wait_for(
        lambda: "stale or duplicate" in fleet.log("w1"), 10, "the duplicate to be dropped"
    )
    assert len(marker.read_text().splitlines()) == 1


def test_malformed_messages_are_dropped_and_the_worker_keeps_serving(fleet) -> None:
    import kombu

    from broker_config import EXECUTE_TASK_NAME, make_celery_app

    fleet.start_worker()
    fleet.start_scheduler()
    broker = fleet.env["TRADEWIND_BROKER_URL"]
    app = make_celery_app(broker, fleet.home / "broker")
    with kombu.Connection(broker) as connection:
        connection.Producer().publish(
            b"{this is not json",
            routing_key="default",
            content_type="application/json",
            content_encoding="utf-8",
            headers={"task": EXECUTE_TASK_NAME, "id": "not-json"},
            declare=[kombu.Queue("default")],
        )
    app.send_task(EXECUTE_TASK_NAME, kwargs={"message": {"ti_id": "abc"}}, queue="default")
    app.send_task(EXECUTE_TASK_NAME, args=[1, 2, 3], queue="default")
    unknown = {"ti_id": 999999, "try_number": 1, "dag_id": "d", "run_id": "r", "task_id": "t"}
    app.send_task(EXECUTE_TASK_NAME, kwargs={"message": unknown}, queue="default")

    fleet.trigger("xcom_pipeline", "r1")
    assert fleet.wait_run("xcom_pipeline", "r1") == "success"
    stale = {
        "ti_id": fleet.task_instances("xcom_pipeline", "r1")["numbers"].id,
        "try_number": 1,
        "dag_id": "xcom_pipeline",
        "run_id": "r1",
        "task_id": "numbers",
    }
    app.send_task(EXECUTE_TASK_NAME, kwargs={"message": stale}, queue="default")

    expected = [
        "malformed task-instance message: ti_id",
        "expected one keyword argument 'message', got 3 positional",
        "unknown task instance 999999",
        "stale or duplicate",
    ]
    fleet.wait_for(lambda: all(line in fleet.log("w1") for line in expected), 20, "the drops")
    assert "decode" in fleet.log("w1").lower()
