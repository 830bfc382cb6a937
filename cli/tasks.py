"""``tradewind tasks``: clear or mark task instances of a run, read the log of a try."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from cli import recover as rc
from cli.common import fail, parse_conf, settings_or_exit
from cli.logs import follow_log, resolve_log
from cli.store import get_run, open_store
from state.core import TaskInstanceState, session_scope, structure_of
from state.engine import Purgers, Runs, plan_clear, plan_mark
from state.records import About, Actor, record_event
from state.views import get_dag
from tradewind.settings import SettingsError
from worker.state_store.purge import state_purger
from worker.xcom import XComBackendError
from worker.xcom.purge import xcom_purger

app = typer.Typer(
    help="Test a task, clear or mark task instances, read their logs.", no_args_is_help=True
)


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
    upstream: rc.Upstream = False,
    downstream: rc.Downstream = False,
    past: rc.Past = False,
    future: rc.Future = False,
    only_failed: rc.OnlyFailed = False,
    only_running: rc.OnlyRunning = False,
    dry_run: rc.DryRun = False,
    yes: rc.Yes = False,
) -> None:
    """Reset task instances of a run so the scheduler runs them again (their XComs go).

    Names every task instance it would clear first (through ExternalTaskMarkers too), then
    asks; --dry-run only names them, --yes does not ask."""
    settings = settings_or_exit()
    url = open_store(settings)
    try:  # with object storage, the objects of the cleared XComs (and state) go too
        purgers = Purgers(xcom_purger(settings), None if keep_state else state_purger(settings))
    except (SettingsError, LookupError) as error:
        fail(str(error))
    where = rc.scope(upstream, downstream, past, future, only_failed, only_running)
    with session_scope(url) as session:
        run = get_run(session, dag_id, run_id)
        dag_model = get_dag(session, dag_id, with_structure=True)
        tasks = structure_of(dag_model).tasks if dag_model else {}
        check_task_ids(dag_id, tasks, task_ids or [])
        try:
            plan = plan_clear(session, dag_id, Runs(run_id), task_ids or None, where)
            count = rc.confirm_and_apply(
                session, plan, "cleared", (dry_run, yes), purgers, keep_state
            )
            if not dry_run:
                about = About(dag_id=dag_id, run_id=run_id, logical_date=run.logical_date)
                extra = {"task_ids": task_ids or "all", "cleared": count}
                record_event(session, Actor.cli(), "post_clear_task_instances", about, extra)
        except (*rc.REFUSED, XComBackendError) as error:
            fail(str(error))
    if not dry_run and plan.changes:
        noun = "task instance" if count == 1 else "task instances"
        typer.echo(f"cleared {count} {noun} of {dag_id} run {run_id}")


@app.command()
def mark(
    dag_id: str,
    run_id: str,
    state: Annotated[str, typer.Argument(help="success, failed or skipped")],
    task_ids: Annotated[
        list[str], typer.Option("--task-id", help="A task to mark (repeat the flag).")
    ],
    upstream: rc.Upstream = False,
    downstream: rc.Downstream = False,
    past: rc.Past = False,
    future: rc.Future = False,
    dry_run: rc.DryRun = False,
    yes: rc.Yes = False,
) -> None:
    """Mark task instances of a run success, failed or skipped (with their upstream,
    downstream, past or future ones as asked), naming them first."""
    url = open_store(settings_or_exit())
    if state not in ("success", "failed", "skipped"):
        fail(f"a task instance is marked success, failed or skipped, not {state!r}")
    with session_scope(url) as session:
        get_run(session, dag_id, run_id)
        try:
            where = rc.scope(upstream, downstream, past, future)
            plan = plan_mark(session, dag_id, run_id, task_ids, where, TaskInstanceState(state))
        except rc.REFUSED as error:
            fail(str(error))
        count = rc.confirm_and_apply(session, plan, f"marked {state}", (dry_run, yes))
    if not dry_run and plan.changes:
        noun = "task instance" if count == 1 else "task instances"
        typer.echo(f"marked {count} {noun} of {dag_id} run {run_id} {state}")


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
