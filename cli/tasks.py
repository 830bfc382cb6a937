"""``tradewind tasks``: clear task instances of a run, read the log of a try."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from cli.common import fail, parse_conf, settings_or_exit
from cli.logs import follow_log, resolve_log
from cli.store import get_run, open_store
from state.core import session_scope, structure_of
from state.engine import MarkerDepthExceeded, UnknownDag, clear_task_instances
from state.records import About, Actor, record_event
from state.views import get_dag
from tradewind.settings import SettingsError
from worker.state_store.purge import state_purger
from worker.xcom import XComBackendError
from worker.xcom.purge import xcom_purger

app = typer.Typer(help="Test a task, clear task instances, read their logs.", no_args_is_help=True)


@app.command("test")
def test(
    dag_id: str,
    task_id: str,
    conf: Annotated[
        str | None, typer.Option("--conf", "-c", help="The run's conf, a JSON object.")
    ] = None,
) -> None:
    """Run one task once here, without its upstream tasks (like `airflow tasks test`)."""
    # Imported here: the worker brings Celery (a second of start-up) with it.
    from cli.task_test import test_task

    state = test_task(settings_or_exit(), dag_id, task_id, parse_conf(conf))
    raise typer.Exit(0 if state in ("success", "skipped") else 1)


@app.command()
def clear(
    dag_id: str,
    run_id: str,
    task_ids: Annotated[
        list[str] | None,
        typer.Option("--task-id", help="A task to clear (repeat the flag); default: all."),
    ] = None,
    keep_state: Annotated[
        bool, typer.Option("--keep-state", help="Keep the tasks' state-store values.")
    ] = False,
) -> None:
    """Reset task instances of a run so the scheduler runs them again (their XComs go)."""
    settings = settings_or_exit()
    url = open_store(settings)
    try:  # with object storage, the objects of the cleared XComs (and state) go too
        purge = xcom_purger(settings)
        purge_states = None if keep_state else state_purger(settings)
    except (SettingsError, LookupError) as error:
        fail(str(error))
    with session_scope(url) as session:
        run = get_run(session, dag_id, run_id)
        dag_model = get_dag(session, dag_id, with_structure=True)
        tasks = structure_of(dag_model).tasks if dag_model else {}
        check_task_ids(dag_id, tasks, task_ids or [])
        try:
            count = clear_task_instances(
                session, run, task_ids or None, keep_state, purge, purge_states
            )
            about = About(dag_id=dag_id, run_id=run_id, logical_date=run.logical_date)
            extra = {"task_ids": task_ids or "all", "cleared": count}
            record_event(session, Actor.cli(), "post_clear_task_instances", about, extra)
        except (UnknownDag, XComBackendError, MarkerDepthExceeded) as error:
            fail(str(error))
    noun = "task instance" if count == 1 else "task instances"
    typer.echo(f"cleared {count} {noun} of {dag_id} run {run_id}")


def check_task_ids(dag_id: str, known: Mapping[str, Any], task_ids: list[str]) -> None:
    """A task id the DAG does not have is a typo: say so rather than clear nothing."""
    unknown = [task_id for task_id in task_ids if task_id not in known]
    if unknown:
        fail(f"DAG {dag_id!r} has no task {unknown[0]!r}")


@app.command()
def logs(
    dag_id: str,
    run_id: str,
    task_id: str,
    try_number: Annotated[
        int | None, typer.Option("--try", min=1, help="Default: the latest try.")
    ] = None,
    map_index: Annotated[int, typer.Option("--map-index", help="Of a mapped task.")] = -1,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Wait for the try to start, print while it runs.")
    ] = False,
) -> None:
    """Print the captured log (stdout, stderr, supervisor lines) of one try of a task."""
    settings = settings_or_exit()
    url = open_store(settings)
    key = (dag_id, run_id, task_id, map_index)
    target = resolve_log(settings, url, key, try_number, wait=follow)
    if follow:
        follow_log(url, target)
        return
    if not target.path.is_file():
        fail(f"no log for {target.describe()} at {target.path}")
    typer.echo(target.path.read_text(encoding="utf-8", errors="replace"), nl=False)
