"""DAG sync: parse the DAGs folder and store what changed (structure, version hash, errors).

A file that fails to import is recorded with its error and leaves every other DAG as it was,
including the DAGs that file defined before it broke (they keep running on the last version).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from state.models import DagImportError, DagModel, utcnow
from tradewind.dag import DAG
from tradewind.loader import DagBag


@dataclass
class SyncResult:
    dags: dict[str, DAG] = field(default_factory=dict)
    import_errors: dict[str, str] = field(default_factory=dict)
    changed: list[str] = field(default_factory=list)


def sync_dags(session: Session, folder: Path) -> SyncResult:
    bag = DagBag.collect(folder)
    result = SyncResult(
        dags=bag.dags, import_errors={k: v[0] for k, v in bag.import_errors.items()}
    )
    existing = {model.dag_id: model for model in session.scalars(select(DagModel))}
    for dag in bag.dags.values():
        if _store_dag(session, existing.get(dag.dag_id), dag):
            result.changed.append(dag.dag_id)
    broken_files = set(bag.import_errors)
    for dag_id, model in existing.items():
        # Gone from a file that still imports: deactivate. In a broken file: keep as it was.
        if dag_id not in bag.dags and model.fileloc not in broken_files and model.is_active:
            model.is_active = False
            result.changed.append(dag_id)
    _store_import_errors(session, bag.import_errors)
    return result


def _store_dag(session: Session, model: DagModel | None, dag: DAG) -> bool:
    structure, version = dag.structure(), dag.version_hash()
    fileloc = dag.fileloc or ""
    if model is None:
        session.add(
            DagModel(
                dag_id=dag.dag_id,
                fileloc=fileloc,
                structure=structure,
                version_hash=version,
                is_paused=False,
                is_active=True,
                last_parsed_at=utcnow(),
            )
        )
        session.flush()
        return True
    if model.version_hash == version and model.fileloc == fileloc and model.is_active:
        return False
    model.structure, model.version_hash, model.fileloc = structure, version, fileloc
    model.is_active, model.last_parsed_at = True, utcnow()
    return True


def _store_import_errors(session: Session, errors: dict[str, tuple[str, str]]) -> None:
    session.execute(delete(DagImportError))
    session.add_all(
        DagImportError(fileloc=path, error=line, traceback=trace, timestamp=utcnow())
        for path, (line, trace) in errors.items()
    )
