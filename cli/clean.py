"""``tradewind db clean``: delete ended history older than a time, in batches (Airflow's
``airflow db clean --clean-before-timestamp``).

The deletion itself is ``state.records.history``: short transactions of bounded rows, so a
scheduler and workers running meanwhile never wait on it for long. Here: the time given, the
counts (``--dry-run`` stops there), a confirmation, and a progress bar while the batches run.
"""

from __future__ import annotations

import datetime as dt
import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cli.api_server import purgers_for
from cli.common import EXIT_BAD_INPUT, fail, settings_or_exit
from cli.store import open_store
from state.core import STORE_ERRORS, session_scope
from state.engine import Purgers
from state.records import CleanScope, clean_next_batch, count_history
from tradewind.log_folders import RunLogs
from worker.xcom import XComBackendError


def parse_older_than(text: str) -> tuple[dt.datetime, bool]:
    """``--older-than``'s time, and whether it was naive (then taken as UTC); one line if bad."""
    try:
        moment = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        fail(
            f"--older-than {text!r} is not an ISO date or date-time "
            "(such as 2026-01-31 or 2026-01-31T12:00:00+00:00)",
            EXIT_BAD_INPUT,
        )
    if moment.tzinfo is None:
        return moment.replace(tzinfo=dt.UTC), True
    return moment.astimezone(dt.UTC), False


def clean(
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than",
            help="Delete what ended before this ISO date or date-time (naive: UTC).",
        ),
    ],
    dag_ids: Annotated[
        list[str] | None,
        typer.Option("--dag-id", help="Only this DAG's history (repeat the flag for more)."),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print what would be deleted, per table; delete nothing."),
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete ended runs (success, failed) older than a time, with their task instances, XComs
    (and their objects), state values and logs, and older asset events and event-log rows."""
    moment, naive = parse_older_than(older_than)
    settings = settings_or_exit()
    url = open_store(settings)
    scope = CleanScope(moment, tuple(dag_ids or ()))
    console = Console()
    utc = " (a time without offset is taken as UTC)" if naive else ""
    console.print(f"history that ended before {moment.isoformat()}{utc}", soft_wrap=True)
    counts = count_history_or_exit(url, scope)
    console.print(counts_table(counts))
    total = sum(counts.values())
    if dry_run or not total:
        console.print("dry run: nothing deleted" if dry_run else "nothing to delete")
        return
    confirm(total, yes)
    purgers = purgers_for(settings)  # before the batches: it may read a Connection
    deleted, logs = run_batches(console, url, scope, purgers, RunLogs(settings), total)
    console.print(f"deleted {deleted:,} rows and the logs of the runs ({logs:,} folders here)")


def count_history_or_exit(url: str, scope: CleanScope) -> dict[str, int]:
    try:
        with session_scope(url) as session:
            return count_history(session, scope)
    except STORE_ERRORS as error:
        fail(f"cannot read the store: {error}".splitlines()[0])


def counts_table(counts: dict[str, int]) -> Table:
    table = Table("table", "rows to delete", title=None)
    for name, count in counts.items():
        table.add_row(name, f"{count:,}")
    return table


def confirm(total: int, yes: bool) -> None:
    """Ask before deleting; without a terminal to ask on, refuse (``--yes`` skips the question)."""
    if yes:
        return
    if not sys.stdin.isatty():
        fail("not deleting without confirmation: no terminal to ask on (pass --yes)")
    if not typer.confirm(f"delete these {total:,} rows?", default=False):
        fail("nothing deleted")


def run_batches(
    console: Console, url: str, scope: CleanScope, purgers: Purgers, logs: RunLogs, total: int
) -> tuple[int, int]:
    """Batches until none is left, each committed before the next; rows and log folders gone."""
    deleted = folders = 0
    columns = (
        TextColumn("cleaning"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        bar = progress.add_task("clean", total=total)
        while True:
            try:
                batch = clean_next_batch(url, scope, purgers=purgers)
            except XComBackendError as error:
                fail(f"stopped: {error} ({deleted:,} rows deleted before)")
            if not batch.rows:
                return deleted, folders
            folders += logs.remove(batch.runs)
            deleted += batch.rows
            progress.update(bar, completed=min(deleted, total))
