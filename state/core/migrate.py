"""Create and upgrade the schema of the SQL store with the Alembic migrations shipped in ``state``.

The contract:
- ``upgrade(url)`` brings the database at ``url`` to the newest migration, creating a SQLite
  file's folder first; run again, it does nothing. It runs in ONE transaction on the engine the
  rest of the process uses (``state.core.db.get_engine``): on PostgreSQL and SQLite alike, an
  upgrade applies whole or not at all, and on SQLite two processes upgrading at once queue on the
  write lock instead of both creating the same tables.
- ``current_revision(url)`` is the revision the database is at, ``None`` before the first upgrade.
- ``check_models_match(url)`` lists what differs between ``state.core.models`` and the database.
  After ``upgrade(url)`` it is empty unless a model changed without a migration; make that migration
  with ``python -m state.core.migrations.autogen "what changed"``.

There is no ``alembic.ini``: ``alembic_config`` builds the configuration in code, pointing at the
``migrations`` folder of this package, so an installed wheel migrates without a checkout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.autogenerate.api import AutogenContext
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import JSON, MetaData, TypeDecorator

from state.core.db import get_engine
from state.core.dialects import statements_named
from state.core.models import Base

MIGRATIONS_DIR = Path(__file__).with_name("migrations")


def alembic_config(url: str) -> Config:
    """An Alembic configuration for the database at ``url`` and the migrations of this package."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    # ConfigParser interpolates "%": a URL-encoded password ("p%40ss") would break it unescaped.
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Upgrade the database at ``url`` to ``revision`` in one transaction."""
    config = alembic_config(url)
    with get_engine(url).begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def current_revision(url: str) -> str | None:
    """The revision the database at ``url`` is at; ``None`` when it was never migrated."""
    with get_engine(url).connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def check_models_match(url: str, metadata: MetaData = Base.metadata) -> list[Any]:
    """Alembic's diffs between ``metadata`` (the models) and the database at ``url``.

    Empty when they agree. Each diff is a tuple such as ``("add_column", None, "dag", Column)``,
    or a list of ``("modify_…", …)`` tuples for one column.
    """
    with get_engine(url).connect() as connection:
        options = context_options(connection.dialect.name)
        context = MigrationContext.configure(connection, opts=options)
        return list(compare_metadata(context, metadata))


def context_options(dialect_name: str) -> dict[str, Any]:
    """The options ``env.py`` and ``check_models_match`` give Alembic, so both compare alike."""
    return {
        "target_metadata": Base.metadata,
        "compare_type": True,
        **statements_named(dialect_name).migration_options,
        "render_item": render_item,
    }


def render_item(type_: str, obj: Any, autogen_context: AutogenContext) -> str | bool:
    """Render a column type made with ``TypeDecorator`` (``UTCDateTime``) as its SQL type.

    A migration must not import the models: a later change to ``state.core.models`` would otherwise
    change, or break, what an old migration creates.
    """
    if type_ == "type" and isinstance(obj, TypeDecorator):
        return f"sa.{obj.impl_instance!r}"
    if type_ == "type" and isinstance(obj, JSON) and "postgresql" in obj._variant_mapping:
        # JSON everywhere, JSONB on PostgreSQL (the DAG structure column).
        autogen_context.imports.add("from sqlalchemy.dialects import postgresql")
        return "sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')"
    return False
