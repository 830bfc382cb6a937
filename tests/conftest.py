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

from state.db import get_engine  # noqa: E402  (needs the path above)

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
