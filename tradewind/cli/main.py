"""``tradewind``: the command line, the top floor (it may import every part; none imports it)."""

from __future__ import annotations

import logging
import sys

import typer

from tradewind.settings import Settings, SettingsError, get_settings

app = typer.Typer(
    name="tradewind",
    help="Airflow-style DAGs on a fleet of Celery workers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def settings_or_exit() -> Settings:
    """The settings; a bad ``TRADEWIND_*`` value ends the command with exit code 2."""
    try:
        return get_settings()
    except SettingsError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None


def setup_logging(level: int = logging.INFO) -> None:
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


@app.command()
def scheduler() -> None:
    """Run the scheduler loop (several may run at once against PostgreSQL)."""
    from scheduler import Scheduler

    settings = settings_or_exit()
    setup_logging()
    Scheduler(settings).run_forever()


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def worker(ctx: typer.Context) -> None:
    """Run a Celery worker: the same as ``celery -A worker worker [options]``."""
    settings_or_exit()
    from celery.bin.celery import main as celery_main

    sys.argv = ["celery", "-A", "worker", "worker", *ctx.args]
    celery_main()


def main() -> None:
    app()
