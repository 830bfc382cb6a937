"""Write the migration for a model change: ``python -m state.core.migrations.autogen "what
changed"``.

Upgrades a throwaway SQLite database to head, then autogenerates what differs between it and
``state.core.models`` into ``state/core/migrations/versions/<next number>_<slug>.py`` and prints its
path. When nothing differs it writes nothing and exits with status 1.

Read the file before committing it: autogenerate sees a rename as a drop and an add, and knows
nothing of data that must move with a column.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

from state.core import alembic_config, check_models_match, get_engine, upgrade


def next_revision_id(config: Config) -> str:
    """The number after the highest numbered head, four digits wide ("0002" after "0001", and
    after "0001_name": a revision made beside others on a branch is named after its work)."""
    heads = ScriptDirectory.from_config(config).get_heads()
    numbers = [int(number) for head in heads if (number := head.split("_")[0]).isdigit()]
    return f"{max(numbers, default=0) + 1:04d}"


def autogenerate(message: str) -> Path | None:
    """Write the next migration and return its path; ``None`` when the models match head."""
    with _database_at_head() as url:
        if not check_models_match(url):
            return None
        config = alembic_config(url)
        # "%%" because the option goes through ConfigParser's interpolation.
        config.set_main_option("file_template", "%%(rev)s_%%(slug)s")
        script = command.revision(
            config, message=message, autogenerate=True, rev_id=next_revision_id(config)
        )
    assert script is not None and not isinstance(script, list)  # one head, one script
    return Path(script.path)


@contextmanager
def _database_at_head() -> Iterator[str]:
    """The URL of a SQLite database upgraded to head, deleted afterwards."""
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/autogen.db"
        upgrade(url)
        yield url
        get_engine(url).dispose()  # close the pooled connection before its file goes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m state.core.migrations.autogen")
    parser.add_argument("message", help='what changed, e.g. "add pool.description"')
    args = parser.parse_args(argv)
    path = autogenerate(args.message)
    if path is None:
        print("the models match the migrations: nothing to generate", file=sys.stderr)
        return 1
    print(path)
    print(
        f"then set SCHEMA_REVISION in state/core/models.py to {path.name.split('_')[0]!r}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
