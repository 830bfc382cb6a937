"""``tradewind``: the command line, on the roof: it reads and writes through ``state/``'s functions
as the API does, may import every part, and no part imports it.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading

import typer

from cli import (
    api_server,
    assets,
    broker,
    connections,
    dags,
    db,
    jobs,
    pools,
    providers,
    rotate_key,
    runs,
    standalone,
    tasks,
    users,
    variables,
)
from cli.common import settings_or_exit, setup_logging
from state.core import SecretUnreadable

try:  # typer >= 0.22 raises the usage errors of its own copy of click
    from typer._click.exceptions import UsageError
except ImportError:  # pragma: no cover - older typer, on click itself
    from click.exceptions import UsageError  # type: ignore[assignment]

__all__ = ["app", "main", "settings_or_exit", "setup_logging"]

app = typer.Typer(
    name="tradewind",
    help="Airflow-style DAGs on a fleet of Celery workers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(db.app, name="db")
app.add_typer(dags.app, name="dags")
app.add_typer(runs.app, name="runs")
app.add_typer(tasks.app, name="tasks")
app.add_typer(pools.app, name="pools")
app.add_typer(connections.app, name="connections")
app.add_typer(variables.app, name="variables")
app.add_typer(broker.app, name="broker")
app.add_typer(users.app, name="users")
app.add_typer(assets.app, name="assets")
app.add_typer(jobs.app, name="jobs")
app.add_typer(providers.app, name="providers")
app.command()(standalone.standalone)
app.command("api-server")(api_server.api_server)
app.command("rotate-fernet-key")(rotate_key.rotate_fernet_key)


@app.command()
def scheduler() -> None:
    """Run the scheduler loop (several may run at once against PostgreSQL)."""
    from scheduler import Scheduler

    settings = settings_or_exit()
    setup_logging()
    stop = threading.Event()
    # SIGTERM (compose, honcho, systemd) ends the loop as Ctrl-C does: the job row ends too.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: stop.set())
    with contextlib.suppress(KeyboardInterrupt):
        # The purgers delete the objects of the XComs and state values the retention deletes.
        Scheduler(settings, purgers=api_server.purgers_for(settings)).run_forever(stop)


@app.command()
def triggerer(
    capacity: int = typer.Option(
        None, "--capacity", min=1, help="Triggers run at once (TRADEWIND_TRIGGERER_CAPACITY)."
    ),
) -> None:
    """Run the triggerer: deferred tasks' and asset watchers' triggers in one asyncio loop
    (several may run at once against PostgreSQL)."""
    from triggerer import Triggerer

    settings = settings_or_exit()
    setup_logging()
    Triggerer(settings, capacity=capacity).run_forever()


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def worker(ctx: typer.Context) -> None:
    """Run a Celery worker: the same as `celery -A worker worker`, with the same options."""
    settings_or_exit()
    from celery.bin.celery import main as celery_main

    sys.argv = ["celery", "-A", "worker", "worker", *ctx.args]
    celery_main()


def main() -> None:
    """The console script: a usage mistake is one ``error:`` line and exit code 2."""
    try:
        code = app(standalone_mode=False)
    except UsageError as error:
        sys.exit(usage_error(error))
    except typer.Abort:  # Ctrl-C or end of input at a prompt
        typer.echo("aborted", err=True)
        sys.exit(1)
    except SecretUnreadable as error:  # a secret under a key this process lacks: one line
        typer.echo(f"error: {error}", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


def usage_error(error: UsageError) -> int:
    # no_args_is_help: the help is already printed; the "error" is only the exit code.
    if type(error).__name__ != "NoArgsIsHelpError":
        where = f" (see `{error.ctx.command_path} --help`)" if error.ctx else ""
        typer.echo(f"error: {error.format_message()}{where}", err=True)
    return error.exit_code
