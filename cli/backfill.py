"""``tradewind dags backfill DAG_ID --from-date --to-date``: runs for the intervals of a range.

The backfill and its queued runs are made by ``state.engine.backfills.create_backfill``, as for
``POST /api/v2/backfills``; the scheduler starts the runs within the DAG's ``max_active_runs``.
With ``--wait`` the command follows them to their end.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import Annotated

import typer

from cli.common import EXIT_BAD_INPUT, fail, settings_or_exit
from cli.store import open_store, sync_folder
from state.core import DagRunState, session_scope
from state.engine import BackfillRequest, InvalidBackfill, UnknownDag, create_backfill
from state.records import About, Actor, record_event
from state.views import run_states

_ENDED = (DagRunState.SUCCESS, DagRunState.FAILED)


def _date(text: str, flag: str) -> dt.datetime:
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        fail(f"{flag} {text!r} is not an ISO date (2024-01-31 or 2024-01-31T06:00)", EXIT_BAD_INPUT)
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def backfill(
    dag_id: str,
    from_date: Annotated[str, typer.Option("--from-date", help="First interval start (ISO).")],
    to_date: Annotated[str, typer.Option("--to-date", help="Last interval start (ISO).")],
    wait: Annotated[bool, typer.Option("--wait", help="Wait for the runs to end.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Create backfill runs for the DAG's intervals starting from --from-date to --to-date."""
    start, end = _date(from_date, "--from-date"), _date(to_date, "--to-date")
    settings = settings_or_exit()
    url = open_store(settings)
    sync_folder(settings, url)
    try:
        with session_scope(url) as session:
            actor = Actor.cli()
            done = create_backfill(session, BackfillRequest(dag_id, start, end), actor.user)
            extra = {"backfill_id": done.backfill_id, "runs": len(done.created)}
            record_event(session, actor, "create_backfill", About(dag_id=dag_id), extra)
    except InvalidBackfill as error:
        fail(str(error), EXIT_BAD_INPUT)
    except UnknownDag as error:
        fail(str(error))
    states = _wait(url, dag_id, done.created) if wait else {}
    if as_json:
        document = {"backfill_id": done.backfill_id, "dag_id": dag_id, "created": done.created}
        document["existing"] = done.existing
        typer.echo(json.dumps({**document, "states": states}, indent=2))
    else:
        typer.echo(f"backfill {done.backfill_id} of {dag_id}: {len(done.created)} runs created")
        for run_id in done.created:
            typer.echo(f"  {run_id}" + (f": {states[run_id]}" if run_id in states else ""))
        if done.existing:
            typer.echo(f"  {len(done.existing)} intervals already had a run")
    if any(state != DagRunState.SUCCESS for state in states.values()):
        raise typer.Exit(1)


def _wait(url: str, dag_id: str, run_ids: list[str]) -> dict[str, str]:
    """Poll until every run has ended (the scheduler runs them); their final states."""
    while True:
        with session_scope(url) as session:
            states = run_states(session, dag_id, run_ids)
        if all(state in _ENDED for state in states.values()):
            return states
        time.sleep(1.0)
