"""The migrations in state/migrations build exactly the schema of state.core.models.

``check_models_match`` is the guard: a model changed without a migration makes it non-empty and
these tests fail. Fix: ``python -m state.core.migrations.autogen "what changed"``, then review the
file.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Column, Integer, MetaData, String, Table, inspect, text

from state.core import migrate
from state.core.db import get_engine, schema_revision
from state.core.migrate import (
    MIGRATIONS_DIR,
    alembic_config,
    check_models_match,
    current_revision,
    upgrade,
)
from state.core.migrations import autogen
from state.core.models import NAMING, SCHEMA_REVISION, Base

PG_DATABASE_PREFIX = "tw_mig_"


def head() -> str | None:
    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def test_the_models_name_the_newest_migration() -> None:
    assert head() == SCHEMA_REVISION


def assert_upgrade_builds_the_models(url: str) -> None:
    assert schema_revision(url) is None
    upgrade(url)
    assert current_revision(url) == head()
    assert schema_revision(url) == head()  # what the commands read without Alembic
    tables = set(inspect(get_engine(url)).get_table_names())
    assert tables == set(Base.metadata.tables) | {"alembic_version"}
    assert check_models_match(url) == []


def test_sqlite_upgrade_to_head_matches_the_models(tmp_path: Path) -> None:
    folder = tmp_path / "not" / "yet" / "there"
    url = f"sqlite:///{folder}/tradewind.db"
    assert_upgrade_builds_the_models(url)
    assert folder.is_dir()
    upgrade(url)  # a second run finds nothing to do
    assert current_revision(url) == head()


@pytest.mark.integration
def test_postgresql_upgrade_to_head_matches_the_models(pg_url: str) -> None:
    assert current_revision(pg_url) is None
    assert_upgrade_builds_the_models(pg_url)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_store_made_by_the_first_release_upgrades_with_its_pools(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = (
        f"sqlite:///{tmp_path}/old.db" if backend == "sqlite" else request.getfixturevalue("pg_url")
    )
    upgrade(url, "0001")
    with get_engine(url).begin() as connection:
        connection.execute(
            text("INSERT INTO slot_pool (name, slots, occupied) VALUES ('etl', 3, 0)")
        )
    upgrade(url)
    with get_engine(url).begin() as connection:
        assert connection.execute(text("SELECT name, slots FROM slot_pool")).all() == [("etl", 3)]
    assert check_models_match(url) == []


def test_a_model_change_without_a_migration_is_reported(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/tradewind.db"
    upgrade(url)
    changed = MetaData(naming_convention=NAMING)
    for table in Base.metadata.tables.values():
        table.to_metadata(changed)
    changed.tables["dag"].append_column(Column("throwaway", String(10), nullable=True))
    Table("throwaway_table", changed, Column("id", Integer, primary_key=True))

    diffs = check_models_match(url, metadata=changed)

    reported = {(diff[0], diff[2], diff[3].name) for diff in diffs if diff[0] == "add_column"}
    assert reported == {("add_column", "dag", "throwaway")}
    assert [diff[1].name for diff in diffs if diff[0] == "add_table"] == ["throwaway_table"]
    assert len(diffs) == 2


def test_downgrade_to_base_drops_every_table(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/tradewind.db"
    upgrade(url)
    with get_engine(url).begin() as connection:
        config = alembic_config(url)
        config.attributes["connection"] = connection
        command.downgrade(config, "base")
    assert inspect(get_engine(url)).get_table_names() == ["alembic_version"]


def test_env_connects_by_itself_from_the_url_option(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/tradewind.db"
    command.upgrade(alembic_config(url), "head")  # no connection attribute: env.py opens one
    assert current_revision(url) == head()
    assert check_models_match(url) == []


def test_offline_mode_prints_the_sql_for_the_urls_dialect() -> None:
    config = alembic_config("postgresql://nobody@127.0.0.1:1/never_connected")
    config.output_buffer = io.StringIO()
    command.upgrade(config, "head", sql=True)
    script = config.output_buffer.getvalue()
    assert "CREATE TABLE task_instance" in script
    assert "TIMESTAMP WITH TIME ZONE" in script


def test_env_without_a_database_says_what_is_missing() -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    with pytest.raises(ValueError, match="no database for the migrations"):
        command.upgrade(config, "head")


@pytest.fixture
def migrations_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of state/migrations that autogen writes into, so a test never edits the real one."""
    copy = tmp_path / "migrations"
    shutil.copytree(migrate.MIGRATIONS_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(migrate, "MIGRATIONS_DIR", copy)
    return copy


def test_autogen_writes_nothing_when_the_models_match(
    migrations_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = sorted((migrations_copy / "versions").iterdir())
    assert autogen.main(["nothing changed"]) == 1
    assert sorted((migrations_copy / "versions").iterdir()) == before
    assert "nothing to generate" in capsys.readouterr().err


def test_autogen_writes_a_migration_that_builds_the_models(
    migrations_copy: Path, tmp_path: Path
) -> None:
    for old in (migrations_copy / "versions").glob("*.py"):
        old.unlink()  # with no migration at all, every table is a change to write

    assert autogen.main(["the tables"]) == 0

    [written] = (migrations_copy / "versions").glob("*.py")
    assert written.name == "0001_the_tables.py"
    assert "state.core.models" not in written.read_text()  # types rendered as plain SQLAlchemy
    url = f"sqlite:///{tmp_path}/tradewind.db"
    upgrade(url)
    assert check_models_match(url) == []


def test_the_next_revision_id_follows_the_highest_number() -> None:
    number = int((head() or "0").partition("_")[0])
    assert autogen.next_revision_id(alembic_config("sqlite://")) == f"{number + 1:04d}"


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_the_aliases_known_before_0006_get_ids(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = (
        f"sqlite:///{tmp_path}/old.db" if backend == "sqlite" else request.getfixturevalue("pg_url")
    )
    upgrade(url, "0005")
    with get_engine(url).begin() as connection:
        connection.execute(
            text("INSERT INTO asset_alias_asset (alias_name, asset_id) VALUES ('nightly', 1)")
        )
        connection.execute(
            text(
                "INSERT INTO dag_asset_reference (dag_id, reference) VALUES"
                " ('a', 'alias:nightly'), ('b', 'alias:hourly'), ('c', 'asset:s3://x')"
            )
        )
    upgrade(url)
    with get_engine(url).begin() as connection:
        names = connection.execute(text('SELECT name, "group" FROM asset_alias ORDER BY name'))
        assert names.all() == [("hourly", "asset"), ("nightly", "asset")]
    assert check_models_match(url) == []
