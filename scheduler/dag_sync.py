"""DAG sync: parse the DAGs folder and store what changed (structure, version hash, errors).

Every file is imported in a child process (``tradewind/dag_processor.py``), never in the
scheduler's: a file that exits, crashes, hangs or eats memory is its import error, and this
process stores the structures the children send back.

A file that fails to import is recorded with its error and leaves every other DAG as it was,
including the DAGs that file defined before it broke (they keep running on the last version).
A DAG that imports but names a pool that does not exist is refused the same way, alone: the
other DAGs of its file are stored.

Several schedulers sync at once against PostgreSQL: every write here is one that a second
scheduler can repeat (insert-if-missing, upsert), and rows are written in ``dag_id`` order so two
syncs never wait on each other's locks in a circle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from scheduler.asset_runs import sync_dag_assets
from state.core import (
    DEFAULT_POOL,
    DEFAULT_POOL_SLOTS,
    DagImportError,
    DagModel,
    insert_for,
    insert_missing,
    utcnow,
)
from state.engine import ensure_pool, pool_names
from state.records import store_facets
from tradewind.dag_processor import DagFolder, StoredDag

#: Structure keys whose change makes the next scheduled run be computed afresh.
_SCHEDULE_KEYS = ("schedule", "start_date", "catchup", "timetable", "timezone", "end_date")


@dataclass
class SyncResult:
    dags: dict[str, StoredDag] = field(default_factory=dict)
    import_errors: dict[str, str] = field(default_factory=dict)
    changed: list[str] = field(default_factory=list)
    #: Per file that used Airflow 2 spellings: its one warning line.
    warnings: dict[str, str] = field(default_factory=dict)


def sync_dags(session: Session, folder: Path) -> SyncResult:
    bag = DagFolder.parse(folder)
    errors = dict(bag.import_errors)
    ensure_pool(session, DEFAULT_POOL, DEFAULT_POOL_SLOTS)
    refused = _refuse_unknown_pools(bag.dags, pool_names(session), errors)
    dags = {dag_id: dag for dag_id, dag in bag.dags.items() if dag_id not in refused}
    result = SyncResult(dags=dags, import_errors={k: v[0] for k, v in errors.items()})
    result.warnings = {path: bag.warning_line(path) or "" for path in bag.spellings}
    existing = {model.dag_id: model for model in session.scalars(select(DagModel))}
    for dag_id in sorted(dags):
        model = existing.get(dag_id)
        if _store_dag(session, model, dags[dag_id]):
            sync_dag_assets(session, dag_id, dags[dag_id].structure)
            store_facets(session, dag_id, dags[dag_id].structure)
            result.changed.append(dag_id)
        elif model is not None and model.owners is None:  # migrated by an SQL script
            store_facets(session, dag_id, dags[dag_id].structure)
    kept_as_was = set(errors) | set(refused)
    for dag_id in sorted(existing):
        model = existing[dag_id]
        # Gone from a file that still imports: deactivate. In a broken file: keep as it was.
        gone = dag_id not in bag.dags and model.fileloc not in kept_as_was
        if gone and model.is_active:
            model.is_active = False
            result.changed.append(dag_id)
    _store_import_errors(session, errors)
    return result


def _refuse_unknown_pools(
    dags: Mapping[str, StoredDag], pools: set[str], errors: dict[str, tuple[str, str]]
) -> set[str]:
    """DAGs whose tasks name a pool that does not exist, recorded as their file's import error."""
    refused: set[str] = set()
    for dag_id in sorted(dags):
        dag = dags[dag_id]
        unknown = sorted({t["pool"] for t in dag.structure["tasks"].values()} - pools)
        if not unknown:
            continue
        refused.add(dag_id)
        line = (
            f"DAG {dag_id}: pool {unknown[0]!r} does not exist "
            f"(create it with `tradewind pools set {unknown[0]} SLOTS`)"
        )
        fileloc = dag.fileloc
        earlier = errors.get(fileloc)
        errors[fileloc] = (f"{earlier[0]}; {line}", earlier[1]) if earlier else (line, "")
    return refused


def _store_dag(session: Session, model: DagModel | None, dag: StoredDag) -> bool:
    structure, version, fileloc = dag.structure, dag.version_hash, dag.fileloc
    if model is None:
        # Another scheduler may store it first: then its row stands, the same DAG parsed alike.
        row = {
            "dag_id": dag.dag_id,
            "fileloc": fileloc,
            "structure": structure,
            "version_hash": version,
            "is_paused": bool(dag.paused_upon_creation),
            "is_active": True,
            "last_parsed_at": utcnow(),
        }
        insert_missing(session, DagModel, [row], ["dag_id"])
        return True
    if model.version_hash == version and model.fileloc == fileloc and model.is_active:
        return False
    if _schedule_changed(model.structure, structure):
        model.next_dagrun_after = None  # computed again by the scheduler, from the new schedule
    model.structure, model.version_hash, model.fileloc = structure, version, fileloc
    model.is_active, model.last_parsed_at = True, utcnow()
    return True


def _schedule_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    return any(old.get(key) != new.get(key) for key in _SCHEDULE_KEYS)


def _store_import_errors(session: Session, errors: Mapping[str, tuple[str, str]]) -> None:
    session.execute(delete(DagImportError).where(DagImportError.fileloc.not_in(list(errors))))
    if not errors:
        return
    rows = [
        {"fileloc": path, "error": line, "traceback": trace, "timestamp": utcnow()}
        for path, (line, trace) in sorted(errors.items())
    ]
    statement = insert_for(session)(DagImportError).values(rows)
    update = {
        "error": statement.excluded.error,
        "traceback": statement.excluded.traceback,
        "timestamp": statement.excluded.timestamp,
    }
    session.execute(statement.on_conflict_do_update(index_elements=["fileloc"], set_=update))
