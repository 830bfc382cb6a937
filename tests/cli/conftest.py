"""Fixtures of the CLI tests: a DAGs folder, a fresh ``TRADEWIND_HOME``, two ways to run commands.

``cli`` runs a command in this process (typer's ``CliRunner``) with the test's settings;
``run_cli`` runs ``python -m cli`` as a real process, for the commands that fork
tasks or start a worker, and to see exactly what a user's terminal would.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from cli.main import app
from tests.stores import migrated
from tradewind.settings import ENV_PREFIX, reload_settings

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "dags"

GOOD_DAG = """
from tradewind import dag, task


@task
def first() -> int:
    return 1


@task(retries=1)
def second(value: int) -> int:
    return value + 1


@task(trigger_rule="all_done")
def third(a: int, b: int) -> int:
    return a + b


@dag(dag_id="pair")
def pair():
    one = first()
    third(one, second(one))


pair()
"""


@dataclass
class CliEnv:
    """What a test's commands run against."""

    home: Path
    dags: Path
    # A standalone serves the API: on a port of its own, so tests running at once never clash.
    api_port: int = field(default_factory=lambda: free_port())

    def variables(self) -> dict[str, str]:
        return {
            "TRADEWIND_HOME": str(self.home),
            "TRADEWIND_DAGS_FOLDER": str(self.dags),
            "TRADEWIND_API_PORT": str(self.api_port),
        }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def dags_folder(tmp_path: Path) -> Path:
    """A folder with one good DAG (``pair``: first -> second -> third, first -> third)."""
    folder = tmp_path / "dags"
    folder.mkdir()
    (folder / "pair.py").write_text(textwrap.dedent(GOOD_DAG))
    return folder


@pytest.fixture
def env(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    dags_folder: Path,
) -> Iterator[CliEnv]:
    """A clean ``TRADEWIND_*`` environment: a fresh home, the test's DAGs folder.

    The home's embedded store is there already, at the newest schema (a copy: ``tests/stores.py``),
    as after a user's first command: each command of a test would otherwise start by migrating
    it, in a process of its own, for seconds of CPU. A module that tests that first migration sets
    ``FRESH_STORE = True`` and gets a home without a store.
    """
    for name in list(os.environ):
        if name.upper().startswith(ENV_PREFIX) or name == "COLUMNS":
            monkeypatch.delenv(name)
    cli_env = CliEnv(tmp_path / "home", dags_folder)
    for name, value in cli_env.variables().items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    if not getattr(request.module, "FRESH_STORE", False):
        migrated(reload_settings().sql_url)
    reload_settings()
    yield cli_env
    # Undo first: the cached settings must be read from the environment as it was before.
    monkeypatch.undo()
    reload_settings()


@pytest.fixture
def examples_env(env: CliEnv, monkeypatch: pytest.MonkeyPatch) -> CliEnv:
    """``env`` with the bundled examples (``etl_example``) as the DAGs folder."""
    env.dags = EXAMPLES
    monkeypatch.setenv("TRADEWIND_DAGS_FOLDER", str(EXAMPLES))
    reload_settings()
    return env


@pytest.fixture
def cli(env: CliEnv) -> Callable[..., Result]:
    """Run ``tradewind <args>`` in this process; the settings are re-read for each command."""

    def invoke(*args: str) -> Result:
        reload_settings()
        return CliRunner().invoke(app, list(args))

    return invoke


def process_env(cli_env: CliEnv, extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without ``TRADEWIND_*`` (or ``COLUMNS``), then ``cli_env``'s."""
    kept = {
        name: value
        for name, value in os.environ.items()
        if not name.upper().startswith(ENV_PREFIX) and name != "COLUMNS"
    }
    return {**kept, **cli_env.variables(), **(extra or {})}


def tradewind(*args: str) -> list[str]:
    return [sys.executable, "-m", "cli", *args]


def run_tradewind(
    cli_env: CliEnv, *args: str, extra_env: dict[str, str] | None = None, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m cli <args>`` to its end, output captured."""
    return subprocess.run(
        tradewind(*args),
        env=process_env(cli_env, extra_env),
        cwd=cli_env.home.parent,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,  # as a job with nothing to read: never the test run's own
    )


@pytest.fixture
def run_cli(env: CliEnv) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``python -m cli <args>`` as a process with the test's environment."""

    def run(
        *args: str, extra_env: dict[str, str] | None = None, timeout: float = 90
    ) -> subprocess.CompletedProcess[str]:
        return run_tradewind(env, *args, extra_env=extra_env, timeout=timeout)

    return run


@contextlib.contextmanager
def started(cli_env: CliEnv, *args: str) -> Iterator[subprocess.Popen[str]]:
    """``python -m cli <args>`` running; stopped (if need be) and reaped afterwards."""
    process = subprocess.Popen(
        tradewind(*args),
        env=process_env(cli_env),
        cwd=cli_env.home.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            # SIGTERM first: a standalone stops its worker, which SIGKILL would orphan.
            process.terminate()
            try:
                process.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        process.communicate()


def processes_using(home: Path) -> list[int]:
    """Pids of live processes whose environment names ``home`` as ``TRADEWIND_HOME``."""
    marker = f"TRADEWIND_HOME={home}".encode() + b"\0"
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if marker in environ.read_bytes() + b"\0":
                found.append(int(environ.parent.name))
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return found
