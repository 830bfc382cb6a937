"""``tradewind jobs check``: whether a live job of a kind is registered, for probes.

As Airflow's ``airflow jobs check``: the running jobs with the latest heartbeats are read (at most
``--limit``, 0 for all), the ones that beat within ``TRADEWIND_JOB_HEALTH_THRESHOLD_SECONDS`` are
alive; exit 0 with one line when one is (or several, with ``--allow-multiple``), exit 1 with one
line when none is or the store cannot be read. ``--local`` keeps this host's jobs (a container
probing its own process); ``--hostname`` another host's. Kinds are Tradewind's (``scheduler``,
``worker``, ``triggerer``, ``api_server``, ``dag_processor``) or Airflow's (``SchedulerJob``...).
"""

from __future__ import annotations

from typing import Annotated

import typer

from cli.common import EXIT_BAD_INPUT, fail, settings_or_exit
from state.core import StoreError, display_url, session_scope
from state.records import alive_jobs, job_kind, this_host

app = typer.Typer(help="Look at the components' jobs and heartbeats.", no_args_is_help=True)


@app.command("check")
def check(
    job_type: Annotated[
        str | None,
        typer.Option(
            "--job-type",
            help="scheduler, worker, triggerer, api_server or dag_processor "
            "(or Airflow's SchedulerJob, TriggererJob, DagProcessorJob). Default: any.",
        ),
    ] = None,
    hostname: Annotated[
        str | None, typer.Option("--hostname", help="Only jobs registered by this host.")
    ] = None,
    limit: Annotated[
        int,
        typer.Option("--limit", min=0, help="Read at most this many latest jobs (0: all)."),
    ] = 1,
    allow_multiple: Annotated[
        bool, typer.Option("--allow-multiple", help="More than one alive job is fine.")
    ] = False,
    local: Annotated[bool, typer.Option("--local", help="Only jobs of this host.")] = False,
) -> None:
    """Exit 0 if a job of the kind is alive (running, beating within the threshold), else 1."""
    if allow_multiple and limit == 1:
        fail("--allow-multiple needs --limit above 1, or 0 for no limit", EXIT_BAD_INPUT)
    if hostname and local:
        fail("--hostname and --local cannot be used together", EXIT_BAD_INPUT)
    try:
        kind = job_kind(job_type) if job_type is not None else None
    except ValueError as error:
        fail(f"--job-type: {error}", EXIT_BAD_INPUT)
    settings = settings_or_exit()
    host = this_host() if local else hostname
    try:
        with session_scope(settings.sql_url) as session:
            alive = alive_jobs(session, kind, settings.job_health_threshold, host, limit)
    except StoreError as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        fail(f"cannot read jobs from {display_url(settings.sql_url)}: {reason}")
    if not alive:
        fail("no alive jobs found")
    if len(alive) > 1 and not allow_multiple:
        fail(f"found {len(alive)} alive jobs, expected only one (see --allow-multiple)")
    typer.echo("found one alive job" if len(alive) == 1 else f"found {len(alive)} alive jobs")
