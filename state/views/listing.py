"""The listings the API server pages through: DAGs, import errors, run counts, pools,
variables and connections. Each is one query for the page and one for the total; the CLI lists
every DAG and import error at once (``all_dags``, ``all_import_errors``), with the same filter.

Filters are the ones Airflow's REST API takes where Tradewind has the concept; a ``pattern``
matches anywhere in the name (SQL ``LIKE``, ``%`` and ``_`` escaped), as Airflow's do.
"""

from __future__ import annotations

import datetime as dt
import zlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import ColumnElement, Row, ScalarSelect, Select, func, literal, or_, select
from sqlalchemy.orm import Session, aliased, defer

from state.core import (
    MAX_PAGE_LIMIT,
    Column,
    Connection,
    DagImportError,
    DagModel,
    DagRun,
    DagRunState,
    DagTag,
    Page,
    Pool,
    TaskInstance,
    TaskInstanceState,
    Variable,
    ordering,
    page_of,
)


def contains(column: Column, pattern: str | None) -> ColumnElement[bool] | None:
    """``column`` contains ``pattern`` literally (None when there is no pattern)."""
    return column.contains(pattern, autoescape=True) if pattern else None


def starts_with(column: Column, prefix: str | None) -> ColumnElement[bool] | None:
    """``column`` starts with ``prefix`` literally (None when there is no prefix)."""
    return column.startswith(prefix, autoescape=True) if prefix else None


def present(*conditions: ColumnElement[bool] | None) -> list[ColumnElement[bool]]:
    """The conditions that are there: a filter not asked for is None."""
    return [condition for condition in conditions if condition is not None]


@dataclass(frozen=True)
class DagFilter:
    """Which DAGs a list keeps (Airflow's ``GET /dags`` filters; ``search`` is the UI's box).

    ``tags`` keeps a DAG with any of them (``tags_match_mode="all"``: with every one of them);
    ``owners`` a DAG with any of them; ``last_run_state`` a DAG whose newest run is in it.
    """

    paused: bool | None = None
    dag_id_pattern: str | None = None
    exclude_stale: bool = True
    display_name_pattern: str | None = None
    search: str | None = None
    tags: Sequence[str] = ()
    tags_match_mode: str = "any"
    owners: Sequence[str] = ()
    last_run_state: str | None = None


_NEVER = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _last_runs() -> Any:
    """Each DAG's newest run (greatest id), joined to the DAG's row: one probe of
    ``ix_dag_run_dag_id_id`` per DAG rather than a GROUP BY over every run."""
    return aliased(DagRun, name="last_run")


def _last_run_id() -> ScalarSelect[int]:
    newest = select(DagRun.id).where(DagRun.dag_id == DagModel.dag_id)
    return newest.order_by(DagRun.id.desc()).limit(1).correlate(DagModel).scalar_subquery()


def _dag_order(last: Any) -> dict[str, Column]:
    shown_name = func.coalesce(DagModel.display_name, DagModel.dag_id)
    return {
        "dag_id": DagModel.dag_id,
        "dag_display_name": shown_name,
        "is_paused": DagModel.is_paused,
        "last_parsed_time": DagModel.last_parsed_at,
        "next_dagrun": DagModel.next_dagrun_after,
        "next_dagrun_run_after": DagModel.next_dagrun_after,
        "last_run_state": last.state,
        # A DAG never run sorts as the oldest on every dialect (PostgreSQL puts NULL last).
        "last_run_start_date": func.coalesce(
            last.start_date, literal(_NEVER, DagRun.start_date.type)
        ),
    }


def _tagged(tags: Sequence[str], mode: str) -> ColumnElement[bool] | None:
    if not tags:
        return None
    having = select(DagTag.dag_id).where(DagTag.name.in_(list(tags))).group_by(DagTag.dag_id)
    if mode == "all":
        having = having.having(func.count(DagTag.name.distinct()) == len(set(tags)))
    return DagModel.dag_id.in_(having)


def _owned(owners: Sequence[str]) -> ColumnElement[bool] | None:
    if not owners:
        return None
    return or_(*(DagModel.owners.contains(f",{o},", autoescape=True) for o in owners))


def _searched(text: str | None) -> ColumnElement[bool] | None:
    """The UI's search box: the id or the display name contains ``text``, in any case."""
    if not text:
        return None
    return or_(
        DagModel.dag_id.icontains(text, autoescape=True),
        DagModel.display_name.icontains(text, autoescape=True),
    )


def _dags(where: DagFilter, last: Any = None) -> Select[DagModel]:
    # The structure is read through ``structure_of`` (once per version), never with the row: a
    # DAG of 5,000 tasks would decode its JSON on every list otherwise.
    query = select(DagModel).options(defer(DagModel.structure))
    if last is not None:
        query = query.outerjoin(last, last.id == _last_run_id())
    shown_name = func.coalesce(DagModel.display_name, DagModel.dag_id)
    return query.where(
        *present(
            DagModel.is_paused.is_(where.paused) if where.paused is not None else None,
            DagModel.is_active.is_(True) if where.exclude_stale else None,
            contains(DagModel.dag_id, where.dag_id_pattern),
            shown_name.icontains(where.display_name_pattern, autoescape=True)
            if where.display_name_pattern
            else None,
            _searched(where.search),
            _tagged(where.tags, where.tags_match_mode),
            _owned(where.owners),
            last.state == where.last_run_state
            if last is not None and where.last_run_state
            else None,
        )
    )


_LAST_RUN_FIELDS = {"last_run_state", "last_run_start_date"}


def list_dags(
    session: Session, page: Page, where: DagFilter = DagFilter()
) -> tuple[list[DagModel], int]:
    """A page of DAGs and how many the filter keeps (two statements); each DAG's newest run
    is joined only when the filter or the order asks for it (the count: only the filter)."""
    filtered = where.last_run_state is not None
    ordered = any(field.removeprefix("-") in _LAST_RUN_FIELDS for field in page.order_by)
    last = _last_runs()
    if page.order_by and not {"dag_id", "-dag_id"} & set(page.order_by):
        page = replace(page, order_by=(*page.order_by, "dag_id"))  # pages never overlap on ties
    terms = ordering(page.order_by or ["dag_id"], _dag_order(last))
    rows = session.scalars(
        _dags(where, last if filtered or ordered else None)
        .order_by(*terms)
        .limit(page.bounded_limit)
        .offset(max(page.offset, 0))
    )
    counted = _dags(where, last if filtered else None).order_by(None).subquery()
    total = session.scalar(select(func.count()).select_from(counted))
    return list(rows), int(total or 0)


def dag_tags(session: Session, limit: int = 500) -> list[str]:
    """The tags the active DAGs carry, each once, by name (the DAG list's tag choices)."""
    active = select(DagModel.dag_id).where(DagModel.is_active.is_(True))
    query = select(DagTag.name).where(DagTag.dag_id.in_(active)).distinct().order_by(DagTag.name)
    return list(session.scalars(query.limit(limit)))


def all_dags(session: Session, where: DagFilter = DagFilter()) -> list[DagModel]:
    """Every DAG the filter keeps, by id, unpaged: what ``tradewind dags list`` prints."""
    return list(session.scalars(_dags(where).order_by(DagModel.dag_id)))


def get_dag(session: Session, dag_id: str, with_structure: bool = False) -> DagModel | None:
    """The DAG, its structure loaded only when read (``state.core.structure.structure_of`` reads
    it once per version: a large DAG's JSON is not decoded on every page).

    ``with_structure`` reads it with the row: one statement rather than two for a process that
    reads a DAG once (a CLI command), where no version has been parsed yet.
    """
    if with_structure:
        return session.get(DagModel, dag_id)
    return session.get(DagModel, dag_id, options=[defer(DagModel.structure)])


def files_with_import_errors(session: Session, filelocs: Collection[str]) -> set[str]:
    if not filelocs:
        return set()
    query = select(DagImportError.fileloc).where(DagImportError.fileloc.in_(list(filelocs)))
    return set(session.scalars(query))


def import_error_id(fileloc: str) -> int:
    """The integer id of a file's import error: stable, derived from its path (the key)."""
    return zlib.crc32(fileloc.encode()) & 0x7FFFFFFF


_IMPORT_ERROR_ORDER = {
    "id": DagImportError.fileloc,
    "import_error_id": DagImportError.fileloc,
    "filename": DagImportError.fileloc,
    "timestamp": DagImportError.timestamp,
}


def list_import_errors(
    session: Session, page: Page, filename_pattern: str | None = None
) -> tuple[list[DagImportError], int]:
    query = select(DagImportError).where(
        *present(contains(DagImportError.fileloc, filename_pattern))
    )
    rows, total = page_of(session, query, page, _IMPORT_ERROR_ORDER, ["id"])
    return [row[0] for row in rows], total


def all_import_errors(session: Session) -> list[DagImportError]:
    """Every file that fails to import, by path, unpaged: what ``tradewind dags list`` prints."""
    return list(session.scalars(select(DagImportError).order_by(DagImportError.fileloc)))


def get_import_error(session: Session, error_id: int) -> DagImportError | None:
    """The import error whose derived id is ``error_id`` (a file that fails is one row)."""
    filelocs = session.scalars(select(DagImportError.fileloc).limit(MAX_PAGE_LIMIT * 10))
    for fileloc in filelocs:
        if import_error_id(fileloc) == error_id:
            return session.get(DagImportError, fileloc)
    return None


def run_counts(
    session: Session, dag_ids: Sequence[str] | None, limit: int
) -> tuple[dict[str, dict[DagRunState, int]], int]:
    """Runs per DAG and state, for at most ``limit`` DAGs (by id); and how many DAGs match."""
    dags = select(DagModel.dag_id).where(DagModel.is_active.is_(True))
    if dag_ids:
        dags = dags.where(DagModel.dag_id.in_(list(dag_ids)))
    total = session.scalar(select(func.count()).select_from(dags.subquery())) or 0
    chosen = list(session.scalars(dags.order_by(DagModel.dag_id).limit(limit)))
    counts: dict[str, dict[DagRunState, int]] = {dag_id: {} for dag_id in chosen}
    if chosen:
        query = (
            select(DagRun.dag_id, DagRun.state, func.count())
            .where(DagRun.dag_id.in_(chosen))
            .group_by(DagRun.dag_id, DagRun.state)
        )
        for dag_id, state, count in session.execute(query):
            counts[dag_id][DagRunState(state)] = count
    return counts, total


@dataclass(frozen=True)
class PoolUse:
    """A pool and what its task instances are doing now."""

    name: str
    slots: int
    description: str | None = None
    running: int = 0
    queued: int = 0
    scheduled: int = 0

    @property
    def occupied(self) -> int:
        return self.running + self.queued

    @property
    def open(self) -> int:
        return max(self.slots - self.occupied, 0)


_POOL_ORDER = {"id": Pool.name, "name": Pool.name, "pool": Pool.name, "slots": Pool.slots}
_COUNTED = (TaskInstanceState.RUNNING, TaskInstanceState.QUEUED, TaskInstanceState.SCHEDULED)


def list_pools(
    session: Session, page: Page, name_pattern: str | None = None
) -> tuple[list[PoolUse], int]:
    columns = (Pool.name, Pool.slots, Pool.description)
    query = select(*columns).where(*present(contains(Pool.name, name_pattern)))
    rows, total = page_of(session, query, page, _POOL_ORDER, ["id"])
    return _pool_uses(session, rows), total


def get_pool_use(session: Session, name: str) -> PoolUse | None:
    query = select(Pool.name, Pool.slots, Pool.description).where(Pool.name == name)
    rows = session.execute(query).all()
    uses = _pool_uses(session, rows)
    return uses[0] if uses else None


def all_pool_uses(session: Session, limit: int) -> list[PoolUse]:
    """Every pool's use, by name, at most ``limit`` of them (two queries)."""
    query = select(Pool.name, Pool.slots, Pool.description).order_by(Pool.name).limit(limit)
    return _pool_uses(session, session.execute(query).all())


def _pool_uses(session: Session, pools: Sequence[Row[*tuple[Any, ...]]]) -> list[PoolUse]:
    names = [row.name for row in pools]
    counts: dict[tuple[str, str], int] = {}
    if names:
        query = (
            select(TaskInstance.pool, TaskInstance.state, func.count())
            .where(TaskInstance.pool.in_(names), TaskInstance.state.in_(_COUNTED))
            .group_by(TaskInstance.pool, TaskInstance.state)
        )
        counts = {(pool, state): count for pool, state, count in session.execute(query)}
    return [
        PoolUse(
            row.name,
            row.slots,
            row.description,
            running=counts.get((row.name, TaskInstanceState.RUNNING), 0),
            queued=counts.get((row.name, TaskInstanceState.QUEUED), 0),
            scheduled=counts.get((row.name, TaskInstanceState.SCHEDULED), 0),
        )
        for row in pools
    ]


_VARIABLE_ORDER = {"key": Variable.key, "id": Variable.key}


def list_variables_page(
    session: Session, page: Page, key_pattern: str | None = None
) -> tuple[list[Variable], int]:
    query = select(Variable).where(*present(contains(Variable.key, key_pattern)))
    rows, total = page_of(session, query, page, _VARIABLE_ORDER, ["id"])
    return [row[0] for row in rows], total


_CONNECTION_ORDER = {
    "connection_id": Connection.conn_id,
    "conn_id": Connection.conn_id,
    "id": Connection.conn_id,
    "conn_type": Connection.conn_type,
    "host": Connection.host,
}


def list_connections_page(
    session: Session, page: Page, id_pattern: str | None = None
) -> tuple[list[Connection], int]:
    query = select(Connection).where(*present(contains(Connection.conn_id, id_pattern)))
    rows, total = page_of(session, query, page, _CONNECTION_ORDER, ["id"])
    return [row[0] for row in rows], total
