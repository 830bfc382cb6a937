"""A real ``tradewind api-server`` on PostgreSQL, driven by Airflow's own Python client.

The server, a scheduler and a Celery worker run as processes of the fleet; the client
(``apache-airflow-client`` 3.3) lists DAGs, unpauses, triggers with conf, waits for the run,
reads task instances, a log and an XCom, edits pools and variables, lists assets, creates an
asset event that triggers its consumer, and creates a backfill, as it would against Airflow 3.3.
Bad input comes back as one clear 4xx and changes nothing.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import airflow_client.client as airflow
import pytest
from airflow_client.client.exceptions import ApiException

from tests.integration.conftest import Fleet

DAGS = Path(__file__).parent / "api_dags"
ASSET_DAGS = Path(__file__).parent / "api_asset_dags"
PASSWORD = "s3cret-for-the-test"

pytestmark = pytest.mark.integration


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _declare_large_body(base: str, path: str, headers: dict[str, str]) -> tuple[int, Any]:
    """Send the headers of a 5 MiB body, then read the answer before sending any of it."""
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.putrequest("POST", path)
        for name, value in {**headers, "Content-Length": str(5 * 1024 * 1024)}.items():
            connection.putheader(name, value)
        connection.endheaders()
        reply = connection.getresponse()
        return reply.status, json.loads(reply.read())
    finally:
        connection.close()


def _serve(make_fleet: Callable[..., Fleet], dags: Path) -> tuple[Fleet, str]:
    fleet = make_fleet(dags)
    tradewind = [sys.executable, "-m", "cli"]
    create = [*tradewind, "users", "create", "--username", "admin", "--password", PASSWORD]
    subprocess.run([*create, "--role", "admin"], env=fleet.env, check=True, timeout=60)
    base = fleet.start_api()
    return fleet, base


@pytest.fixture
def server(make_fleet: Callable[..., Fleet]) -> tuple[Fleet, str]:
    return _serve(make_fleet, DAGS)


@pytest.fixture
def asset_server(make_fleet: Callable[..., Fleet]) -> tuple[Fleet, str]:
    return _serve(make_fleet, ASSET_DAGS)


def _client(base: str) -> airflow.ApiClient:
    body = json.dumps({"username": "admin", "password": PASSWORD}).encode()
    code, reply = _post(f"{base}/auth/token", body, {"Content-Type": "application/json"})
    assert code == 201, reply
    return airflow.ApiClient(
        airflow.Configuration(host=base, access_token=str(reply["access_token"]))
    )


def _wait_run(runs: airflow.DagRunApi, dag_id: str, run_id: str) -> str:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        state = str(runs.get_dag_run(dag_id, run_id).state.value)
        if state in ("success", "failed"):
            return state
        time.sleep(0.3)
    raise AssertionError(f"run {run_id} did not end")


@pytest.mark.timeout(240)
def test_airflows_client_drives_a_run_through_the_api(server: tuple[Fleet, str]) -> None:
    fleet, base = server
    client = _client(base)
    dags, runs = airflow.DAGApi(client), airflow.DagRunApi(client)
    tis = airflow.TaskInstanceApi(client)

    listed = dags.get_dags()
    assert [dag.dag_id for dag in listed.dags] == ["greeting"]
    assert listed.dags[0].tags[0].name == "api"
    assert dags.patch_dag("greeting", airflow.DAGPatchBody(is_paused=True)).is_paused
    assert not dags.patch_dag("greeting", airflow.DAGPatchBody(is_paused=False)).is_paused

    body = airflow.TriggerDAGRunPostBody(
        dag_run_id="from-api", logical_date=None, conf={"name": "tradewind"}
    )
    run = runs.trigger_dag_run("greeting", body)
    assert (run.dag_run_id, run.state.value, run.conf) == (
        "from-api",
        "queued",
        {"name": "tradewind"},
    )

    fleet.start_scheduler()
    fleet.start_worker()
    assert _wait_run(runs, "greeting", "from-api") == "success"

    instances = tis.get_task_instances("greeting", "from-api").task_instances
    assert {(ti.task_id, ti.state.value, ti.try_number) for ti in instances} == {
        ("greet", "success", 1),
        ("shout", "success", 1),
    }
    log = tis.get_log("greeting", "from-api", "greet", 1)
    assert any("greeting tradewind" in line.event for line in log.content.actual_instance)
    xcom = airflow.XComApi(client).get_xcom_entry("greeting", "shout", "from-api", "return_value")
    assert xcom.actual_instance.value == "HELLO TRADEWIND"

    cleared = runs.clear_dag_run("greeting", "from-api", airflow.DAGRunClearBody(dry_run=False))
    assert cleared.actual_instance.state.value == "queued"
    assert _wait_run(runs, "greeting", "from-api") == "success"
    assert tis.get_task_instance("greeting", "from-api", "greet").try_number == 2

    marked = tis.patch_task_instance(
        "greeting", "from-api", "shout", airflow.PatchTaskInstanceBody(new_state="failed")
    )
    assert [(ti.task_id, ti.state.value) for ti in marked.task_instances] == [("shout", "failed")]
    assert _wait_run(runs, "greeting", "from-api") == "failed"  # the scheduler settles it again
    run = runs.patch_dag_run("greeting", "from-api", airflow.DAGRunPatchBody(state="success"))
    assert run.state.value == "success"
    deps = tis.get_task_instance_dependencies("greeting", "from-api", "shout").dependencies
    assert [d.name for d in deps] == ["Task Instance State"]


def test_pools_variables_and_import_errors_through_the_client(server: tuple[Fleet, str]) -> None:
    _, base = server
    client = _client(base)
    pools = airflow.PoolApi(client)
    pools.post_pool(airflow.PoolBody(name="etl", slots=3))
    assert {(p.name, p.slots, p.open_slots) for p in pools.get_pools().pools} == {
        ("default_pool", 128, 128),
        ("etl", 3, 3),
    }
    variables = airflow.VariableApi(client)
    variables.post_variable(airflow.VariableBody(key="region", value="eu-west-1"))
    assert variables.get_variable("region").value == "eu-west-1"
    errors = airflow.ImportErrorApi(client).get_import_errors().import_errors
    assert [Path(e.filename).name for e in errors] == ["broken.py"]
    assert "broken on purpose" in errors[0].stack_trace


def test_bad_input_is_a_clear_4xx_and_changes_nothing(server: tuple[Fleet, str]) -> None:
    _, base = server
    client = _client(base)
    runs, tis = airflow.DagRunApi(client), airflow.TaskInstanceApi(client)
    body = airflow.TriggerDAGRunPostBody(logical_date=None)
    with pytest.raises(ApiException) as unknown_dag:
        runs.trigger_dag_run("nope", body)
    assert unknown_dag.value.status == 404 and "no DAG named 'nope'" in str(unknown_dag.value.body)
    with pytest.raises(ApiException) as unknown_run:
        runs.get_dag_run("greeting", "never")
    assert unknown_run.value.status == 404
    with pytest.raises(ApiException) as unknown_task:
        tis.get_task_instance("greeting", "never", "greet")
    assert unknown_task.value.status == 404

    token = client.configuration.access_token
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    trigger = f"{base}/api/v2/dags/greeting/dagRuns"
    code, reply = _post(trigger, json.dumps({"logical_date": None, "conf": [1]}).encode(), headers)
    assert code == 422 and reply["detail"][0]["loc"][-1] == "conf"
    code, reply = _declare_large_body(base, "/api/v2/dags/greeting/dagRuns", headers)
    assert code == 413 and "request body is over" in str(reply["detail"])
    bad_token = {**headers, "Authorization": "Bearer forged"}
    code, reply = _post(trigger, b'{"logical_date": null}', bad_token)
    assert code == 401 and "invalid token" in str(reply["detail"])
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    code, reply = _post(f"{base}/auth/login", b"username=admin&password=" + PASSWORD.encode(), form)
    assert code == 403 and "CSRF" in str(reply["detail"])
    assert runs.get_dag_runs("greeting").total_entries == 0


def _wait_for_runs(runs: airflow.DagRunApi, dag_id: str, run_type: str, count: int) -> list[Any]:
    """The DAG's runs of ``run_type`` once ``count`` of them have ended."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = [r for r in runs.get_dag_runs(dag_id).dag_runs if r.run_type.value == run_type]
        if len(found) >= count and all(r.state.value in ("success", "failed") for r in found):
            return found
        time.sleep(0.3)
    raise AssertionError(f"{count} {run_type} runs of {dag_id} did not end")


@pytest.mark.timeout(300)
def test_an_asset_event_and_a_backfill_through_the_client(
    asset_server: tuple[Fleet, str],
) -> None:
    fleet, base = asset_server
    client = _client(base)
    assets, runs = airflow.AssetApi(client), airflow.DagRunApi(client)
    listed = assets.get_assets()
    assert [(a.uri, a.name) for a in listed.assets] == [("s3://reports/daily", "daily_report")]
    assert [d.dag_id for d in listed.assets[0].scheduled_dags] == ["read_report"]
    fleet.start_scheduler()
    fleet.start_worker()

    body = airflow.CreateAssetEventsBody(asset_id=listed.assets[0].id, extra={"by": "hand"})
    event = assets.create_asset_event(body)
    assert (event.uri, event.extra) == ("s3://reports/daily", {"by": "hand", "from_rest_api": True})
    # The producer's own scheduled run may update the asset too: one run or two, all done.
    triggered = _wait_for_runs(runs, "read_report", "asset_triggered", 1)
    assert {r.state.value for r in triggered} == {"success"}

    backfills = airflow.BackfillApi(client)
    dates = {"from_date": "2024-01-01T00:00:00Z", "to_date": "2024-01-02T00:00:00Z"}
    dry = backfills.create_backfill_dry_run(
        airflow.BackfillPostBody(dag_id="daily_report", **dates)
    )
    assert dry.total_entries == 2
    created = backfills.create_backfill(airflow.BackfillPostBody(dag_id="daily_report", **dates))
    assert [b.id for b in backfills.list_backfills(dag_id="daily_report").backfills] == [created.id]
    ended = _wait_for_runs(runs, "daily_report", "backfill", 2)
    assert [r.state.value for r in ended] == ["success", "success"]
    assert backfills.get_backfill(created.id).completed_at is not None
    with pytest.raises(ApiException) as done:
        backfills.pause_backfill(created.id)
    assert done.value.status == 409 and "already completed" in str(done.value.body)
    # Each backfill run of the producer updated the asset: its events list them.
    sources = {
        e.source_dag_id for e in assets.get_asset_events(source_dag_id="daily_report").asset_events
    }
    assert sources == {"daily_report"}
