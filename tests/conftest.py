"""Fixtures shared by every test folder.

``pg_url`` gives a test its own fresh PostgreSQL database on this machine's server, dropped
afterwards. Tests that use it are integration tests: mark them ``@pytest.mark.integration``.
"""

from __future__ import annotations

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


PG_SERVER_URL = "postgresql://postgres@127.0.0.1:5432"
PG_ADMIN_URL = f"{PG_SERVER_URL}/test"


@pytest.fixture
def pg_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of a new, empty PostgreSQL database, dropped (connections and all) afterwards.

    A test module may set ``PG_DATABASE_PREFIX`` to name its databases (``tw_test_`` otherwise),
    so a database left behind by a killed run says which tests made it.
    """
    prefix = getattr(request.module, "PG_DATABASE_PREFIX", "tw_test_")
    name = f"{prefix}{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = f"{PG_SERVER_URL}/{name}"
    yield url
    # Close this process's pool first: a connection the server kills under it stays open
    # client-side, and psycopg warns (ResourceWarning) once the engine holding it is collected.
    get_engine(url).dispose()
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
