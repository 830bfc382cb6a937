"""``tradewind standalone``: a real Celery worker and the scheduler on the embedded defaults.

End to end as a user runs it on a fresh machine: SQLite and the filesystem broker under
``TRADEWIND_HOME``, the example DAG with its retry, and no worker process left behind.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable

import pytest
from sqlalchemy import select

from cli.standalone import WORKER_STOP_SECONDS
from state.core.db import session_scope
from state.core.models import TaskInstance
from tradewind.settings import get_settings

from .conftest import CliEnv, processes_using, run_tradewind, started

RunCli = Callable[..., subprocess.CompletedProcess[str]]
RESULT = "report result: 5 orders worth 81.0 USD loaded; sent to the data team"

pytestmark = pytest.mark.timeout(240)


def test_standalone_run_executes_the_example_end_to_end(
    run_cli: RunCli, examples_env: CliEnv
) -> None:
    done = run_cli("standalone", "--run", "etl_example", timeout=180)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "4/4" in done.stdout  # the progress display's last frame
    assert "success 4" in done.stdout
    assert RESULT in done.stdout
    assert "the UI: `tradewind standalone` serves it at http://" in done.stdout
    assert "/dags/etl_example/runs/" in done.stdout and "sign in as admin" in done.stdout
    worker_log = (examples_env.home / "worker.log").read_text()
    assert "celery@" in worker_log  # a real Celery worker served the run
    # A triggerer ran beside them (deferred tasks, asset watchers), and stopped with them.
    assert "triggerer" in (examples_env.home / "triggerer.log").read_text()
    assert processes_using(examples_env.home) == []


def test_standalone_with_an_unknown_dag_starts_nothing(
    run_cli: RunCli, examples_env: CliEnv
) -> None:
    done = run_cli("standalone", "--run", "nope")

    assert done.returncode == 1
    assert done.stderr == "error: no DAG named 'nope': see `tradewind dags list`\n"
    assert not (examples_env.home / "worker.log").exists()


def test_standalone_serves_triggered_runs_and_stops_cleanly_on_sigterm(
    examples_env: CliEnv,
) -> None:
    with started(examples_env, "standalone", "-c", "1") as server:
        triggered = run_tradewind(
            examples_env, "dags", "trigger", "etl_example", "--wait", timeout=180
        )
        assert triggered.returncode == 0, triggered.stdout + triggered.stderr
        assert RESULT in triggered.stdout
        server.send_signal(signal.SIGTERM)
        out, err = server.communicate(timeout=30)
    assert server.returncode == 0, out + err
    assert "stopping the worker and the scheduler" in out
    assert wait_until_gone(examples_env) == []


def test_standalone_serves_the_api_with_a_generated_admin_password(examples_env: CliEnv) -> None:
    base = f"http://127.0.0.1:{examples_env.api_port}"
    with started(examples_env, "standalone", "-c", "1") as server:
        line = wait_for_line(server, "API server: ")
        kept = examples_env.home / "standalone_admin_password"
        password = kept.read_text().strip()
        assert line == f"API server: {base} (sign in as admin, password {password}; kept in {kept})"
        assert kept.stat().st_mode & 0o777 == 0o600
        token = wait_for_token(base, password)
        request = urllib.request.Request(
            f"{base}/api/v2/dags/etl_example", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as reply:
            assert json.loads(reply.read())["dag_id"] == "etl_example"
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=30)
    with started(examples_env, "standalone", "-c", "1") as again:
        line = wait_for_line(again, "API server: ")
        assert password not in line and "first password was kept in" in line
    assert wait_until_gone(examples_env) == []


def wait_for_line(server: subprocess.Popen[str], prefix: str) -> str:
    assert server.stdout is not None
    for line in server.stdout:
        if line.startswith(prefix):
            return line.rstrip("\n")
    raise AssertionError(f"standalone never printed {prefix!r}: {server.communicate()}")


def wait_for_token(base: str, password: str, timeout_seconds: float = 60) -> str:
    body = json.dumps({"username": "admin", "password": password}).encode()
    deadline = time.monotonic() + timeout_seconds
    while True:
        request = urllib.request.Request(
            f"{base}/auth/token", data=body, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as reply:
                return str(json.loads(reply.read())["access_token"])
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def wait_until_gone(cli_env: CliEnv, timeout_seconds: float = 10) -> list[int]:
    """The processes still using the test's home once they had time to exit."""
    deadline = time.monotonic() + timeout_seconds
    while (left := processes_using(cli_env.home)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


NAP_DAG = """
import time
import urllib.request

from tradewind import dag, task


@task
def nap() -> None:
    print("napping", flush=True)
    time.sleep(300)


@dag(dag_id="sleeper")
def sleeper():
    nap()


sleeper()
"""


@pytest.mark.parametrize("signals", [1, 2], ids=["grace-then-kill", "second-signal-kills"])
def test_stopping_standalone_never_leaves_a_worker_or_task_behind(
    env: CliEnv, signals: int
) -> None:
    (env.dags / "sleeper.py").write_text(NAP_DAG)
    with started(env, "standalone", "-c", "1") as server:
        assert run_tradewind(env, "dags", "trigger", "sleeper", "--run-id", "r1").returncode == 0
        wait_for_state(env, server, "nap", "running")
        signalled = time.monotonic()
        for _ in range(signals):
            server.send_signal(signal.SIGTERM)
            time.sleep(1)
        out, err = server.communicate(timeout=60)
        stopped_after = time.monotonic() - signalled
    assert server.returncode == 0, out + err
    assert wait_until_gone(env) == []  # the worker, its pool and the napping task
    if signals == 2:
        assert stopped_after < WORKER_STOP_SECONDS  # no waiting out the grace period
    else:
        assert stopped_after >= WORKER_STOP_SECONDS  # the running task was given its grace


def wait_for_state(
    cli_env: CliEnv,
    server: subprocess.Popen[str],
    task_id: str,
    state: str,
    timeout_seconds: float = 90,
) -> None:
    """Wait for ``task_id`` to be ``state``; failing, show what standalone and its worker said."""
    deadline = time.monotonic() + timeout_seconds
    query = select(TaskInstance.state).filter_by(task_id=task_id)
    seen = None
    while time.monotonic() < deadline and server.poll() is None:
        with session_scope(get_settings().sql_url) as session:
            seen = session.scalars(query).first()
        if seen == state:
            return
        time.sleep(0.2)
    server.terminate()
    out, err = server.communicate(timeout=60)
    log_file = cli_env.home / "worker.log"
    worker_log = log_file.read_text()[-4000:] if log_file.exists() else "(no worker.log)"
    raise AssertionError(
        f"{task_id} never became {state} (last seen: {seen}); standalone exited "
        f"{server.returncode}\n--- stdout\n{out}\n--- stderr\n{err}\n--- worker.log\n{worker_log}"
    )
