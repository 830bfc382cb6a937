"""A task in another language on the real fleet: Python -> Node.js -> Python.

The Node.js task (examples/runtimes/word_stats.js) gets its upstream Python task's XCom in its
handshake and pushes two of its own, which the downstream Python task reads. Once with the SQL
backend on PostgreSQL + Redis; once with object storage on a real S3 API (moto), where the
Node.js task's XComs go through the helper process and the Python tasks' through their own
backend, with the credentials in a Connection.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from state.core.db import session_scope
from state.records.connections import put_connection
from tests.worker.xcom_support import Moto, running_moto
from worker.xcom.object_storage import REFERENCE_KEY

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]
ROOT = Path(__file__).resolve().parents[2]
EXPECTED = "260 words, 11 distinct; top: in=40, tasks=40"


@pytest.fixture(scope="module")
def s3() -> Iterator[Moto]:
    with running_moto() as server:
        yield server


def test_a_node_task_reads_a_python_xcom_and_python_reads_its_xcoms(fleet) -> None:
    fleet.start_worker()
    fleet.start_scheduler()
    fleet.trigger("runtime_pipeline", "r1")

    assert fleet.wait_run("runtime_pipeline", "r1") == "success"
    assert json.loads(fleet.xcom("runtime_pipeline", "r1", "word_stats", "distinct")) == 11
    assert json.loads(fleet.xcom("runtime_pipeline", "r1", "report")) == EXPECTED
    log = fleet.home / "logs" / "runtime_pipeline" / "r1" / "word_stats" / "-1" / "1.log"
    assert "stdout: try 1 of word_stats: 11 distinct words" in log.read_text()


def test_with_object_storage_the_node_tasks_xcoms_go_through_the_helper(
    embedded_fleet, s3: Moto
) -> None:
    bucket = s3.new_bucket()
    with session_scope(embedded_fleet.url) as session:
        extra = {"endpoint_url": s3.endpoint}
        put_connection(
            session, "s3", conn_type="aws", login="testing", password="testing", extra=extra
        )
    embedded_fleet.env.update(
        TRADEWIND_XCOM_BACKEND="object_storage",
        TRADEWIND_OBJECT_STORAGE_URL=f"s3://{bucket}/xcoms",
        TRADEWIND_OBJECT_STORAGE_CONN_ID="s3",
        TRADEWIND_XCOM_OBJECT_THRESHOLD_BYTES="32",
    )
    embedded_fleet.start_worker()
    embedded_fleet.start_scheduler()
    embedded_fleet.trigger("runtime_pipeline", "r1")

    assert embedded_fleet.wait_run("runtime_pipeline", "r1") == "success"
    rows = {
        task_id: json.loads(embedded_fleet.xcom("runtime_pipeline", "r1", task_id))
        for task_id in ("write_text", "word_stats", "report")
    }
    for task_id, row in rows.items():
        assert (
            row[REFERENCE_KEY]
            == f"s3://{bucket}/xcoms/runtime_pipeline/r1/{task_id}/-1/return_value"
        )
    report = s3.client().get_object(
        Bucket=bucket, Key="xcoms/runtime_pipeline/r1/report/-1/return_value"
    )
    assert json.loads(report["Body"].read()) == EXPECTED
    log = embedded_fleet.home / "logs" / "runtime_pipeline" / "r1" / "word_stats" / "-1" / "1.log"
    assert "started the backend helper process for XComs and state objects" in log.read_text()
    # The Connection's secret reached the helper and the Python tasks, never a log line.
    for path in (embedded_fleet.home / "logs").rglob("*.log"):
        assert "testing" not in path.read_text(), path
