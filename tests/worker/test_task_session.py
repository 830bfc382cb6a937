"""What a task process is given and what it leaves (``worker/process.py``, issue 26).

Real processes: a runtime task (or the backend helper, started the same way) is exec'd with its
environment cleaned and its session marked; every process carrying the mark is killed with it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.worker.test_supervisor import pid_gone, wait_until
from worker.helper.client import HELPER_COMMAND
from worker.process import (
    SESSION_ENV,
    TaskProcess,
    close_process_handles,
    end_session,
    exec_runtime_task,
    kill_tree,
    task_environment,
)

STORE = "postgresql://tradewind:hunter22@db.internal:5432/tradewind"
BROKER = "redis://:s3cret-pass@redis.internal:6379/0"


def test_a_task_environment_has_no_setting_that_reaches_the_store_the_broker_or_a_key() -> None:
    given = {
        "TRADEWIND_DATABASE_URL": STORE,
        "TRADEWIND_BROKER_URL": BROKER,
        "TRADEWIND_REMOTE_LOGS_URL": "s3://logs-bucket/tradewind",
        "TRADEWIND_API_SECRET_KEY": "k" * 40,
        "TRADEWIND_FERNET_KEY": "f" * 44,
        "TRADEWIND_API_SECRET_KEY_FILE": "/etc/tradewind/key",  # any TRADEWIND_*SECRET*
        "TRADEWIND_SMTP_PASSWORD": "mail-pass",
        "TRADEWIND_HOME": "/srv/tradewind",
        "TRADEWIND_OBJECT_STORAGE_URL": "s3://xcoms",
        "PATH": "/usr/bin",
        "REPORTING_DB": STORE,  # the store's URL under another name
        "CELERY_BROKER_URL": BROKER + "?x=1",
    }
    assert task_environment(given) == {
        "TRADEWIND_HOME": "/srv/tradewind",
        "TRADEWIND_OBJECT_STORAGE_URL": "s3://xcoms",
        "PATH": "/usr/bin",
    }


def test_a_short_hidden_value_hides_no_other_variable() -> None:
    given = {"TRADEWIND_API_SECRET_KEY": "1", "WORKERS": "1"}
    assert task_environment(given) == {"WORKERS": "1"}


@pytest.fixture
def secrets_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRADEWIND_DATABASE_URL", STORE)
    monkeypatch.setenv("TRADEWIND_BROKER_URL", BROKER)


def _closed(process: TaskProcess) -> bytes:
    """What ``process`` wrote on stdout, once it exited; its handles closed."""
    assert process.popen is not None and process.popen.stdout is not None
    written = process.popen.stdout.read()
    process.popen.wait(30)
    close_process_handles(process)
    return written


@pytest.mark.usefixtures("secrets_set")
@pytest.mark.parametrize("command", [["cat", "/proc/self/environ"], ["env", "-0"]])
def test_a_runtime_task_starts_without_them_marked_with_its_session(command: list[str]) -> None:
    environ = _closed(exec_runtime_task(command)).split(b"\0")
    names = {entry.split(b"=", 1)[0] for entry in environ}
    assert b"TRADEWIND_DATABASE_URL" not in names and b"TRADEWIND_BROKER_URL" not in names
    assert SESSION_ENV.encode() in names
    assert not any(STORE.encode() in entry or BROKER.encode() in entry for entry in environ)


@pytest.mark.usefixtures("secrets_set")
def test_the_backend_helper_starts_without_them() -> None:
    # It runs the XCom and state store backends, which reach no SQL: it needs neither.
    helper = exec_runtime_task(HELPER_COMMAND)
    try:
        environ = Path(f"/proc/{helper.pid}/environ").read_bytes()
    finally:
        helper.signal_group(signal.SIGKILL)
        _closed(helper)
    assert b"TRADEWIND_DATABASE_URL" not in environ and STORE.encode() not in environ


def _pid_in(path: Path) -> int:
    assert wait_until(lambda: path.exists() and path.read_text().strip() != "", 20)
    return int(path.read_text())


@pytest.fixture
def leftovers() -> Iterator[list[int]]:
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_the_end_of_a_session_kills_what_it_started_in_other_sessions(
    tmp_path: Path, leftovers: list[int]
) -> None:
    note = tmp_path / "pid"
    # A child in a session of its own, and its orphan: neither in the task's group any more.
    script = f"setsid sh -c 'sleep 600 & echo $! > {note}; sleep 600' & wait"
    process = exec_runtime_task(["sh", "-c", script])
    leftovers.append(_pid_in(note))
    assert not pid_gone(leftovers[0])

    process.signal_group(signal.SIGKILL)  # what stopping the task's group reaches
    process.popen.wait(30)  # type: ignore[union-attr]
    assert not pid_gone(leftovers[0]), "the setsid descendant was in the task's group"
    close_process_handles(process)  # the try is over: end_session

    assert wait_until(lambda: pid_gone(leftovers[0]), 20)


def test_a_process_without_a_session_mark_is_left_alone(leftovers: list[int]) -> None:
    stranger = subprocess.Popen(["sleep", "600"])
    leftovers.append(stranger.pid)
    process = exec_runtime_task(["true"])
    _closed(process)
    end_session(process)  # twice: harmless
    time.sleep(0.2)
    assert stranger.poll() is None
    stranger.kill()
    stranger.wait()


def test_kill_tree_reaches_every_descendant_whatever_its_session(
    tmp_path: Path, leftovers: list[int]
) -> None:
    note = tmp_path / "pid"
    root = subprocess.Popen(["sh", "-c", f"setsid sh -c 'sleep 600 & echo $! > {note}; wait'"])
    leftovers += [root.pid, _pid_in(note)]

    kill_tree(root.pid)

    root.wait(30)
    assert wait_until(lambda: pid_gone(leftovers[1]), 20)
