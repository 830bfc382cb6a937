"""Airflow's provider packages, installed with ``tradewind providers install``, run unchanged on a
real fleet: SQL on PostgreSQL and SQLite, HTTP against a local server, S3 on moto's server,
Slack's webhook against a local server, email through a real SMTP server; the deferrable HTTP and
S3 sensors' triggers on the fleet's triggerer.

The providers come from a venv cached per set of versions (``tests/providers_env.py``); the
fleet's processes see it on ``PYTHONPATH``. One fleet, every DAG's run at once.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import boto3
import pytest

from state.core.db import session_scope
from state.records import put_connection
from tests.integration.conftest import Fleet
from tests.providers_env import providers_site
from tests.smtp_server import SmtpServer, start_smtp_server

pytestmark = pytest.mark.integration
PG_DATABASE_PREFIX = "tw_providers_"
DAGS = Path(__file__).parent / "provider_dags"
RUNS = ("provider_sql", "provider_http", "provider_s3", "provider_notify")


class _Handler(BaseHTTPRequestHandler):
    received: list[tuple[str, bytes]] = []
    later = threading.Event()  # /later answers 404 until it is set

    def _answer(self, body: bytes, kind: str = "application/json") -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/ready":
            self._answer(b"ok", "text/plain")
        elif self.path == "/later" and self.later.is_set():
            self._answer(b"here at last", "text/plain")
        elif self.path == "/fruit":
            self._answer(json.dumps({"fruit": "apple"}).encode())
        else:
            self.send_error(404)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.received.append((self.path, body))
        self._answer(b"ok" if self.path.startswith("/slack/") else body, "text/plain")

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def web() -> Iterator[tuple[int, list[tuple[str, bytes]]]]:
    _Handler.received = []
    _Handler.later.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], _Handler.received
    server.shutdown()
    server.server_close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def moto_port(tmp_path: Path) -> Iterator[int]:
    port = _free_port()
    log = (tmp_path / "moto.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("moto's server did not start") from None
                time.sleep(0.1)
        yield port
    finally:
        process.terminate()
        process.wait(10)
        log.close()


@pytest.fixture
def smtp(tmp_path: Path) -> Iterator[SmtpServer]:
    yield from start_smtp_server(tmp_path / "smtp")


def _connections(url: str, tmp_path: Path, web: int, moto: int, smtp: int) -> None:
    database = urlsplit(url).path.lstrip("/")
    with session_scope(url) as session:
        put_connection(
            session,
            "pg",
            conn_type="postgres",
            host="127.0.0.1",
            port=5432,
            login="postgres",
            schema=database,
        )
        put_connection(session, "lite", conn_type="sqlite", host=str(tmp_path / "lite.db"))
        put_connection(session, "web", conn_type="http", host="127.0.0.1", port=web, schema="http")
        put_connection(
            session,
            "s3",
            conn_type="aws",
            login="testing",
            password="testing",
            extra={"endpoint_url": f"http://127.0.0.1:{moto}", "region_name": "us-east-1"},
        )
        put_connection(
            session,
            "slack",
            conn_type="slackwebhook",
            host=f"127.0.0.1:{web}",
            schema="http",
            password="slack/T000/B000/secret-hook",
        )
        put_connection(
            session,
            "mail",
            conn_type="smtp",
            host="127.0.0.1",
            port=smtp,
            extra={"disable_tls": True, "disable_ssl": True},
        )


def test_providers_run_unchanged_on_the_fleet(
    make_fleet: Callable[..., Fleet],
    tmp_path: Path,
    web: tuple[int, list[tuple[str, bytes]]],
    moto_port: int,
    smtp: SmtpServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The DAG files are read in child processes of this one too (the fleet's first sync).
    monkeypatch.setenv("PYTHONPATH", str(providers_site()))
    fleet = make_fleet(
        DAGS,
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
    )
    web_port, received = web
    _connections(fleet.url, tmp_path, web_port, moto_port, smtp.port)
    fleet.start_scheduler()
    fleet.start_worker(concurrency=2)
    fleet.start("triggerer", [sys.executable, "-m", "cli", "triggerer"])
    for dag_id in (*RUNS, "provider_deferred"):
        fleet.trigger(dag_id, "r1")
    _deferred_sensors_fire_on_the_triggerer(fleet, moto_port)
    states = {dag_id: fleet.wait_run(dag_id, "r1", timeout=120) for dag_id in RUNS}
    failed = {
        dag_id: fleet.task_states(dag_id, "r1")
        for dag_id, state in states.items()
        if state != "success"
    }
    assert not failed, f"{failed}\n{fleet.log('w1')[-6000:]}"

    # common-sql + postgres: the operator's rows as its XCom; the hook in a @task; get_hook().
    assert json.loads(fleet.xcom("provider_sql", "r1", "select") or "") == [
        ["apple", 3],
        ["pear", 5],
    ]
    assert json.loads(fleet.xcom("provider_sql", "r1", "total") or "") == 8
    assert json.loads(fleet.xcom("provider_sql", "r1", "hook_by_type") or "") == "PostgresHook"
    assert json.loads(fleet.xcom("provider_sql", "r1", "lite") or "") == [[42]]
    assert json.loads(fleet.xcom("provider_sql", "r1", "lite_hook") or "") == 2
    # http: the sensor, the filtered response, a templated POST.
    assert json.loads(fleet.xcom("provider_http", "r1", "get") or "") == "apple"
    assert ("/echo", b'{"fruit": "apple"}') in received
    # amazon: a bucket, an object, the key sensor, a listing, the hook reading it back.
    assert json.loads(fleet.xcom("provider_s3", "r1", "listing") or "") == ["basket/apple.txt"]
    assert json.loads(fleet.xcom("provider_s3", "r1", "read") or "") == "three apples"
    # slack: the webhook got the rendered message; smtp: the mail reached the server.
    slack = [json.loads(body) for path, body in received if path.startswith("/slack/")]
    assert slack and slack[0]["text"] == "run r1 is done"
    message = smtp.wait_messages(1)[0]
    assert str(message["Subject"]).startswith("fruit 20")
    assert message["To"] == "ops@example.com"


def _deferred_sensors_fire_on_the_triggerer(fleet: Fleet, moto: int) -> None:
    """Both sensors poke once, find nothing and defer; once the URL answers and the key exists,
    their triggers fire on the triggerer and each try resumes in ``execute_complete``."""
    sensors = ("http_later", "s3_later")

    def deferred() -> bool:
        states = fleet.task_states("provider_deferred", "r1")
        failed = [t for t, (state, _) in states.items() if state in ("failed", "upstream_failed")]
        assert not failed, f"{states}\n{fleet.log('w1')[-4000:]}"
        return all(states.get(t, ("", 0))[0] == "deferred" for t in sensors)

    fleet.wait_for(deferred, timeout=120, what="both sensors deferred")
    _Handler.later.set()
    boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{moto}",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    ).put_object(Bucket="late", Key="basket/late.txt", Body=b"late apples")
    state = fleet.wait_run("provider_deferred", "r1", timeout=120)
    states = fleet.task_states("provider_deferred", "r1")
    assert state == "success", f"{states}\n{fleet.log('triggerer')[-4000:]}"
    assert {t: states[t] for t in sensors} == {t: ("success", 1) for t in sensors}
