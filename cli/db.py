"""``tradewind db``: the schema of the SQL store."""

from __future__ import annotations

import typer

from cli import clean as clean_command
from cli.common import settings_or_exit
from cli.store import migrate_store
from state.core import display_url

app = typer.Typer(help="The SQL store's schema.", no_args_is_help=True)


@app.command()
def migrate() -> None:
    """Create or upgrade the schema of the SQL store to the newest migration (Alembic)."""
    settings = settings_or_exit()
    before, after = migrate_store(settings)
    where = display_url(settings.sql_url)
    if before == after:
        typer.echo(f"{where}: already at schema {after}")
    else:
        typer.echo(f"{where}: upgraded schema {before or 'none'} -> {after}")


app.command("clean")(clean_command.clean)
