"""The CLI's way into the SQL store: open it (migrating the embedded default), read runs.

``open_store`` is the one place that decides whether a command may touch the database: an
embedded SQLite store is brought to the newest schema on first use (a friendly first run), any
other database must have been migrated with ``tradewind db migrate`` (a shared PostgreSQL is
never altered as a side effect of, say, ``dags list``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cli.common import EXIT_BAD_INPUT, fail
from cli.graph import upstream_first
from state.core import (
    SCHEMA_REVISION,
    DagRun,
    NotFound,
    StoreError,
    TaskInstance,
    TaskSpec,
    display_url,
    is_embedded,
    schema_revision,
    session_scope,
    structure_of,
)
from state.records import read_xcoms
from state.views import get_dag, run_task_instances
from state.views import get_run as run_named
from tradewind.params import ParamValidationError, resolve_params
from tradewind.settings import Settings

if TYPE_CHECKING:
    from scheduler.dag_sync import SyncResult
    from state.core import Session


def check_conf(session: Session, dag_id: str, conf: Mapping[str, Any]) -> None:
    """Refuse a trigger's conf that breaks one of the DAG's params, in one line naming it."""
    model = get_dag(session, dag_id, with_structure=True)
    if model is None:
        return  # create_run says the DAG is unknown
    try:
        resolve_params(structure_of(model), conf)
    except ParamValidationError as error:
        fail(f"DAG {dag_id!r}: {error}", EXIT_BAD_INPUT)


def open_store(settings: Settings) -> str:
    """The store's URL once it is at the newest schema; a one-line error otherwise."""
    url = settings.sql_url
    try:
        at = schema_revision(url)
        if at == SCHEMA_REVISION:
            return url
        if is_embedded(url):
            from state.core import upgrade  # Alembic: only when there is work for it

            upgrade(url)
            return url
    except StoreError as error:
        fail(f"cannot open the SQL store at {display_url(url)}: {first_line(str(error))}")
    fail(
        f"the SQL store at {display_url(url)} is at schema {at or 'none'}, not the newest "
        f"({SCHEMA_REVISION}): run `tradewind db migrate`"
    )


def migrate_store(settings: Settings) -> tuple[str | None, str | None]:
    """Upgrade the store to the newest schema; returns the revisions before and after."""
    from state.core import current_revision, upgrade

    url = settings.sql_url
    try:
        before = current_revision(url)
        upgrade(url)
        return before, current_revision(url)
    except StoreError as error:
        fail(f"cannot migrate the SQL store at {display_url(url)}: {first_line(str(error))}")


def sync_folder(settings: Settings, url: str) -> SyncResult:
    """Parse the DAGs folder and store what changed, as the scheduler does."""
    # Imported here: the scheduler package brings Celery (a second of start-up) with it.
    from scheduler.dag_sync import sync_dags

    with session_scope(url) as session:
        return sync_dags(session, settings.resolved_dags_folder)


def first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else ""


def get_run(session: Session, dag_id: str, run_id: str) -> DagRun:
    """The run, or a one-line error naming what is missing."""
    try:
        return run_named(session, dag_id, run_id)
    except NotFound as error:
        fail(str(error))


def task_instances(
    session: Session, run: DagRun, order: Mapping[str, TaskSpec] | None = None
) -> list[TaskInstance]:
    """The run's task instances in the DAG's order (topological), then by map index."""
    rows = run_task_instances(session, run)
    rank = {task_id: n for n, task_id in enumerate(upstream_first(order or {}))}
    return sorted(rows, key=lambda ti: (rank.get(ti.task_id, len(rank)), ti.task_id, ti.map_index))


def leaf_task_ids(tasks: Mapping[str, TaskSpec]) -> list[str]:
    """Tasks nothing depends on: their results are the run's result."""
    upstream = {up for spec in tasks.values() for up in spec.upstream}
    return [task_id for task_id in tasks if task_id not in upstream]


def return_values(session: Session, run: DagRun, task_id: str) -> list[Any]:
    """The ``return_value`` XComs of one task of a run, by map index, decoded from JSON."""
    rows = read_xcoms(session, run.dag_id, run.run_id, task_id, "return_value")
    return [json.loads(text) for _map_index, text in rows]
