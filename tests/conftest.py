"""Fixtures shared by every test folder.

``pg_url`` gives a test its own fresh PostgreSQL database on this machine's server, dropped
afterwards. Tests that use it are integration tests: mark them ``@pytest.mark.integration``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

# The venv holds the dependencies only, and pytest's "prepend" import mode puts this folder, not
# the repository root, on sys.path: without this, `import state` fails.
_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from state.core.db import get_engine  # noqa: E402  (needs the path above)
from tests.providers_env import providers_ready  # noqa: E402
from tests.stores import postgres_template  # noqa: E402

#: The files that take longest, longest first (seconds on a 2-core machine, from the suite's JUnit
#: report). ``--dist loadfile`` hands files to the four workers in collection order
#: (``--no-loadscope-reorder``): started first, they end early enough for the short files to
#: fill in around them, instead of one of them running alone at the end. Four workers on two
#: cores: most tests wait on processes they started (a fleet, a server, a browser); with two
#: workers the suite kept the cores 30% busy (18.7 min against 26.5 min, the same loaded machine).
SLOW_FILES = (
    "tests/api/test_schemathesis.py",  # 130
    "tests/cli/test_standalone.py",  # 100
    "tests/cli/test_fernet_key.py",  # 95
    "tests/cli/test_task_kinds.py",  # 90
    "tests/cli/test_examples.py",  # 60 under load
    "tests/integration/test_hostile_dag_files.py",  # 75
    "tests/tradewind/test_airflow_examples.py",  # 75
    "tests/integration/test_outages_postgres.py",  # 70
    "tests/integration/test_schedulers.py",  # 45
    "tests/hosts/test_scheduler_cut.py",  # 35
    "tests/hosts/test_store_flap.py",  # 30
    "tests/worker/task_runner/test_iterable_end_to_end.py",  # 30
    "tests/cli/test_inline_runs.py",  # 30
    "tests/integration/test_fleet.py",  # 30
    "tests/integration/test_api_client.py",  # 30
    "tests/integration/test_outages_redis.py",  # 30
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slowest files first, the rest as collected (a stable sort keeps each file's order)."""
    rank = {name: position for position, name in enumerate(SLOW_FILES)}
    root = Path(str(config.rootpath))

    def key(item: pytest.Item) -> int:
        return rank.get(item.path.relative_to(root).as_posix(), len(rank))

    items.sort(key=key)


#: The files whose tests run the provider packages of ``tests/providers_env.py``.
PROVIDER_FILES = ("tests/integration/test_providers_fleet.py",)

_providers_build: list[subprocess.Popen[bytes]] = []


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start making the providers' venv in the background when the run needs it and it is missing.

    A cold machine (a new CI machine) spends minutes installing them: made alongside the first
    files, the venv is ready when its test comes, instead of that test waiting out the install
    (``providers_site`` takes the same lock, so it waits for this one or finds it done). One
    process starts it: the only one, or xdist's first worker (every worker collects every test).
    """
    if os.environ.get("PYTEST_XDIST_WORKER", "gw0") != "gw0" or providers_ready():
        return
    root = Path(str(session.config.rootpath))
    if not any(item.path.relative_to(root).as_posix() in PROVIDER_FILES for item in session.items):
        return
    build = "from tests.providers_env import providers_site; providers_site()"
    _providers_build.append(
        subprocess.Popen(
            [sys.executable, "-c", build],
            cwd=_ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Wait for a build still running (another worker's test may be waiting on it), unless the
    run was interrupted: then it is stopped, and the next run starts it over."""
    for build in _providers_build:
        if exitstatus == pytest.ExitCode.INTERRUPTED and build.poll() is None:
            build.terminate()
        build.wait()


PG_SERVER_URL = "postgresql://postgres@127.0.0.1:5432"
PG_ADMIN_URL = f"{PG_SERVER_URL}/test"


def _database(request: pytest.FixtureRequest, template: str | None = None) -> Iterator[str]:
    """A new PostgreSQL database (a copy of ``template``, if named), dropped afterwards."""
    prefix = getattr(request.module, "PG_DATABASE_PREFIX", "tw_test_")
    name = f"{prefix}{uuid.uuid4().hex[:12]}"
    create = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template is not None:
        create += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(create)
    url = f"{PG_SERVER_URL}/{name}"
    yield url
    # Close this process's pool first: a connection the server kills under it stays open
    # client-side, and psycopg warns (ResourceWarning) once the engine holding it is collected.
    get_engine(url).dispose()
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def pg_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of a new, empty PostgreSQL database, dropped (connections and all) afterwards.

    A test module may set ``PG_DATABASE_PREFIX`` to name its databases (``tw_test_`` otherwise),
    so a database left behind by a killed run says which tests made it.
    """
    yield from _database(request)


@pytest.fixture
def pg_migrated_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """``pg_url``, but at the newest schema already: a copy of the migrated template database
    (``tests/stores.py``), for tests whose store is not what they test."""
    yield from _database(request, postgres_template(PG_ADMIN_URL))
