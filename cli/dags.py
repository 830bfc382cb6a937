"""``tradewind dags``: list, show, trigger and test the DAGs of the DAGs folder."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any

import typer

from cli.backfill import backfill
from cli.check import check
from cli.common import fail, parse_conf, settings_or_exit
from cli.graph import dag_dot, dag_tree
from cli.outcome import print_outcome
from cli.pause import pause, unpause
from cli.render import (
    dag_record,
    dags_table,
    import_error_record,
    import_errors_table,
    make_console,
)
from cli.store import check_conf, open_store, sync_folder
from cli.watch import WatchAborted, watch_run
from state.core import DagStructure, parse_structure, session_scope, structures_of
from state.engine import RunExists, UnknownDag, create_run
from state.records import About, Actor, record_event
from state.views import all_dags, all_import_errors
from tradewind.dag_processor import DagFolder
from tradewind.ids import InvalidId
from tradewind.settings import Settings

app = typer.Typer(help="List, show, trigger, test and pause DAGs.", no_args_is_help=True)
app.command("pause")(pause)
app.command("unpause")(unpause)
app.command("backfill")(backfill)
app.command("check")(check)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
ConfOption = Annotated[
    str | None,
    typer.Option(
        "--conf",
        "-c",
        help="The run's conf, a JSON object (tasks see `params`), checked "
        "against the DAG's params.",
    ),
]


class GraphFormat(StrEnum):
    TEXT = "text"
    DOT = "dot"


@app.command("list")
def list_dags(as_json: JsonFlag = False) -> None:
    """Parse the DAGs folder into the store and list its DAGs and the files that fail to import.

    Each file is imported in a child process: one that exits, crashes or hangs is listed with
    its error, and the others are listed all the same."""
    settings = settings_or_exit()
    url = open_store(settings)
    sync_folder(settings, url)
    with session_scope(url) as session:
        models = all_dags(session)
        # Every DAG's structure in one query, not one per DAG (the listed rows defer it).
        structures = structures_of(session, {model.dag_id: model.version_hash for model in models})
        dags = [dag_record(model, structures[model.dag_id]) for model in models]
        import_errors = [import_error_record(error) for error in all_import_errors(session)]
    if as_json:
        folder = str(settings.resolved_dags_folder)
        document = {"dags_folder": folder, "dags": dags, "import_errors": import_errors}
        typer.echo(json.dumps(document, indent=2))
        return
    console = make_console()
    console.print(f"DAGs folder: {settings.resolved_dags_folder}")
    console.print(dags_table(dags))
    if import_errors:
        console.print(import_errors_table(import_errors))


@app.command()
def show(
    dag_id: str,
    graph_format: Annotated[
        GraphFormat, typer.Option("--format", help="`text`: a tree; `dot`: Graphviz.")
    ] = GraphFormat.TEXT,
) -> None:
    """Show a DAG's tasks and dependencies as a tree, or as Graphviz dot (`| dot -Tpng`)."""
    settings = settings_or_exit()
    structure = parsed_structure(settings, dag_id)
    if graph_format is GraphFormat.DOT:
        typer.echo(dag_dot(structure))
    else:
        make_console().print(dag_tree(structure))


def parsed_structure(settings: Settings, dag_id: str) -> DagStructure:
    """The structure of ``dag_id`` parsed from the DAGs folder (no store needed), each file
    imported in a child process (``tradewind/dag_processor.py``)."""
    folder = settings.resolved_dags_folder
    bag = DagFolder.parse(folder)
    if dag_id in bag.dags:
        return parse_structure(bag.dags[dag_id].structure)
    broken = f" ({len(bag.import_errors)} files fail to import)" if bag.import_errors else ""
    fail(f"no DAG named {dag_id!r} in {folder}{broken}: see `tradewind dags list`")


@app.command()
def trigger(
    dag_id: str,
    conf: ConfOption = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Default: manual__<time>.")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Show progress until the run ends.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Create a DagRun for the scheduler to run; with --wait, exit 0 on success, 1 on failure."""
    parsed_conf = parse_conf(conf)
    settings = settings_or_exit()
    url = open_store(settings)
    created = create_manual_run(settings, url, dag_id, parsed_conf, run_id)
    state = "queued"
    if not as_json:
        typer.echo(f"triggered {dag_id} run {created}")
    if wait:
        state = wait_for_run(url, dag_id, created, stderr=as_json)
        if not as_json:
            print_outcome(make_console(), url, dag_id, created)
    if as_json:
        typer.echo(json.dumps({"dag_id": dag_id, "run_id": created, "state": state}))
    if wait and state != "success":
        raise typer.Exit(1)


def create_manual_run(
    settings: Settings,
    url: str,
    dag_id: str,
    conf: dict[str, Any],
    run_id: str | None = None,
    run_type: str = "manual",
) -> str:
    """Sync the DAGs folder, then create the run; returns its run id."""
    sync_folder(settings, url)
    try:
        with session_scope(url) as session:
            check_conf(session, dag_id, conf)
            actor = Actor.cli()
            run = create_run(
                session,
                dag_id,
                run_id=run_id,
                conf=conf,
                run_type=run_type,
                triggered_by=actor.triggered_by,
                user=actor.user,
            )
            about = About(dag_id=dag_id, run_id=run.run_id, logical_date=run.logical_date)
            record_event(session, actor, "trigger_dag_run", about, {"conf": conf})
            return run.run_id
    except (UnknownDag, RunExists, InvalidId) as error:
        fail(str(error))


def wait_for_run(url: str, dag_id: str, run_id: str, stderr: bool = False) -> str:
    """Watch the run to its end (Ctrl-C stops watching, not the run); returns its state."""
    try:
        return watch_run(url, dag_id, run_id, make_console(stderr=stderr))
    except KeyboardInterrupt:
        typer.echo(f"stopped watching; the run goes on: tradewind runs show {dag_id} {run_id}")
        raise typer.Exit(130) from None
    except WatchAborted as error:
        fail(str(error))


@app.command("test")
def test_dag(
    dag_id: str,
    conf: ConfOption = None,
    run_id: Annotated[
        str | None,
        typer.Option("--run-id", help="Run (or, after `tasks clear`, resume) this run id."),
    ] = None,
    logs: Annotated[bool, typer.Option(help="Print each try's log after it.")] = True,
) -> None:
    """Run one DagRun in this process with no broker or scheduler (like `airflow dags test`)."""
    # Imported here: the worker brings Celery (a second of start-up) with it.
    from cli.inline import run_inline

    parsed_conf = parse_conf(conf)
    settings = settings_or_exit()
    state = run_inline(settings, dag_id, parsed_conf, run_id, logs)
    raise typer.Exit(0 if state == "success" else 1)
