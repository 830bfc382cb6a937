"""A migrated store for a test in milliseconds: a copy of one migrated once, not 21 migrations.

``migrated(url)`` leaves the store at ``url`` as ``state.core.migrate.upgrade(url)`` would leave a
new one, at the newest schema. Running the migrations took 0.5 to 1 s of CPU a test (more under
load), and most tests of the suite start from a fresh store: copying is what kept the suite under
its time. The migrations themselves are still run, and checked against the models, by
``tests/state/test_migrations.py``, and every template below is made by ``upgrade`` itself.

- SQLite: the file is copied from a template this process migrated on first use.
- PostgreSQL: ``pg_migrated_url`` (tests/conftest.py) is a copy of the template database below;
  an empty database (``pg_url``'s) is made again, under the same name, as a copy of a
  template database (``CREATE DATABASE ... TEMPLATE``) that the first test process to need it
  migrated. Its name carries a digest of the migrations, so a change to them makes a new one;
  templates are kept between runs (a cold machine migrates once per run).

A store that already has tables is simply upgraded: ``migrated`` never copies over data.
"""

from __future__ import annotations

import atexit
import hashlib
import shutil
import tempfile
from pathlib import Path

import psycopg
from psycopg import sql
from sqlalchemy import inspect, make_url

from state.core.db import get_engine, is_embedded, normalize_url
from state.core.migrate import MIGRATIONS_DIR, current_revision, upgrade
from state.core.models import SCHEMA_REVISION

#: Any fixed number: the advisory lock under which one test process makes the PostgreSQL template.
_TEMPLATE_LOCK = 7_341_902_118

_sqlite_template: dict[str, Path] = {}


def migrations_digest() -> str:
    """A digest of every migration file: what the template's schema depends on."""
    digest = hashlib.sha256()
    for path in sorted((MIGRATIONS_DIR / "versions").glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    digest.update((MIGRATIONS_DIR / "env.py").read_bytes())
    return digest.hexdigest()[:16]


def migrated(url: str) -> None:
    """Bring the store at ``url`` to the newest schema, from a template when it is new."""
    if _at_newest(url):
        return
    if is_embedded(url):
        database = make_url(normalize_url(url)).database
        if database and not Path(database).exists():
            Path(database).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(_sqlite_template_file(), database)
            return
    elif make_url(normalize_url(url)).get_backend_name() == "postgresql" and _is_empty(url):
        _clone_postgres(url, postgres_template(url))
        return
    upgrade(url)


def _at_newest(url: str) -> bool:
    """Whether the store exists and is at the newest schema (``pg_migrated_url``'s is)."""
    if is_embedded(url):
        database = make_url(normalize_url(url)).database
        if not database or not Path(database).exists():
            return False
    return current_revision(url) == SCHEMA_REVISION


def _sqlite_template_file() -> Path:
    """This process's migrated SQLite file (made on first use, removed when the process ends)."""
    if "path" not in _sqlite_template:
        folder = Path(tempfile.mkdtemp(prefix="tw-store-template-"))
        atexit.register(shutil.rmtree, folder, True)
        path = folder / "template.db"
        url = f"sqlite:///{path}"
        upgrade(url)
        # Disposed: the last connection's close folds the WAL into the file, which is then whole.
        get_engine(url).dispose()
        _sqlite_template["path"] = path
    return _sqlite_template["path"]


def _is_empty(url: str) -> bool:
    with get_engine(url).connect() as connection:
        return not inspect(connection).get_table_names()


def _on_server(url: str, database: str) -> str:
    """The URL of ``database`` on the server of ``url`` (plain ``postgresql://``, for psycopg)."""
    named = make_url(url).set(drivername="postgresql", database=database)
    return named.render_as_string(hide_password=False)


def postgres_template(url: str) -> str:
    """The name of the migrated template database, made under a lock by the first asker."""
    name = f"tw_template_{migrations_digest()}"
    with psycopg.connect(_on_server(url, "test"), autocommit=True) as admin:
        admin.execute("SELECT pg_advisory_lock(%s)", (_TEMPLATE_LOCK,))
        try:
            if not _database_exists(admin, name):
                _makepostgres_template(admin, _on_server(url, name), name)
        finally:
            admin.execute("SELECT pg_advisory_unlock(%s)", (_TEMPLATE_LOCK,))
    return name


def _makepostgres_template(admin: psycopg.Connection[object], url: str, name: str) -> None:
    """Migrate a database under a working name, then rename it: a template is whole or absent."""
    building = f"{name}_building"
    url = _on_server(url, building)
    admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(building)))
    admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(building)))
    upgrade(url)
    get_engine(url).dispose()  # a template may have no connection open when it is copied
    admin.execute(
        sql.SQL("ALTER DATABASE {} RENAME TO {}").format(
            sql.Identifier(building), sql.Identifier(name)
        )
    )


def _database_exists(admin: psycopg.Connection[object], name: str) -> bool:
    found = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
    return found is not None


def _clone_postgres(url: str, template: str) -> None:
    """Make the (empty) database of ``url`` again, as a copy of ``template``."""
    name = make_url(normalize_url(url)).database
    assert name, url
    get_engine(url).dispose()
    with psycopg.connect(_on_server(url, "test"), autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
        admin.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(template)
            )
        )
