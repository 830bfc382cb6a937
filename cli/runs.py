"""``tradewind runs``: what happened in a DAG run, task instance by task instance."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from cli import recover as rc
from cli.assets import event_record
from cli.common import fail, settings_or_exit
from cli.render import make_console, print_task_instances, task_instance_records
from cli.store import get_run, open_store, task_instances
from state.core import DagRun, DagRunState, session_scope, structure_of
from state.engine import plan_run_mark
from state.records import list_events
from state.views import get_dag, items_of_run

app = typer.Typer(help="Inspect DAG runs, mark them.", no_args_is_help=True)


@app.command()
def mark(
    dag_id: str,
    state: Annotated[str, typer.Argument(help="success, failed or queued")],
    run_ids: Annotated[list[str], typer.Argument(help="The runs to mark.")],
    dry_run: rc.DryRun = False,
    yes: rc.Yes = False,
) -> None:
    """Mark whole runs: success marks their unfinished task instances success; failed fails the
    running ones and skips those not started; queued hands them back to the scheduler. Names
    what changes first."""
    url = open_store(settings_or_exit())
    if state not in ("success", "failed", "queued"):
        fail(f"a run is marked success, failed or queued, not {state!r}")
    with session_scope(url) as session:
        runs = [get_run(session, dag_id, run_id) for run_id in run_ids]
        plan = plan_run_mark(session, runs, DagRunState(state))
        rc.confirm_and_apply(session, plan, f"moved by marking the runs {state}", (dry_run, yes))
    if not dry_run and plan.runs_marked:
        noun = "run" if len(plan.runs_marked) == 1 else "runs"
        typer.echo(f"marked {len(plan.runs_marked)} {noun} of {dag_id} {state}")


@app.command()
def show(
    dag_id: str,
    run_id: str,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Every task instance of a run: state, try, duration of the latest try, items done / failed /
    skipped / total of an iterable task, first error line."""
    settings = settings_or_exit()
    url = open_store(settings)
    with session_scope(url) as session:
        run = get_run(session, dag_id, run_id)
        dag_model = get_dag(session, dag_id, with_structure=True)
        order = structure_of(dag_model).tasks if dag_model else None
        document = run_record(run)
        tis = task_instances(session, run, order)
        pairs = ((ti.task_id, ti.map_index) for ti in tis)
        items = items_of_run(session, dag_id, run_id, pairs, order or {})
        document["task_instances"] = task_instance_records(tis, items=items)
        events = list_events(session, source_dag_id=dag_id, source_run_id=run_id)
        document["asset_events"] = [event_record(event) for event in reversed(events)]
    if as_json:
        typer.echo(json.dumps(document, indent=2))
        return
    title = f"{dag_id} {run_id}: {document['state']} ({document['run_type']})"
    if document["partition_key"] is not None:
        title += f", partition {document['partition_key']}"
    print_task_instances(make_console(), title, document["task_instances"])
    for event in document["asset_events"]:
        typer.echo(
            f"asset event: {event['uri']} {json.dumps(event['extra'])} by {event['source_task_id']}"
        )


def run_record(run: DagRun) -> dict[str, Any]:
    """The run's own fields, JSON-ready."""
    return {
        "dag_id": run.dag_id,
        "run_id": run.run_id,
        "state": str(run.state),
        "run_type": run.run_type,
        "conf": run.conf,
        "partition_key": run.partition_key,
        "partition_date": run.partition_date.isoformat() if run.partition_date else None,
        "start_date": run.start_date.isoformat() if run.start_date else None,
        "end_date": run.end_date.isoformat() if run.end_date else None,
    }
