"""What the UI's DAG pages read in bulk: each DAG's latest runs, and a grid's cells.

Both are one statement whatever the size behind them: the latest runs of a page of DAGs are
numbered per DAG by a window function and cut in SQL; a grid's cells are the task instances
of its runs counted by (run, task, state) with GROUP BY, so a task mapped over 2,000 items is
one row per state, not 2,000 rows, and a window of a grid's rows counts the tasks of a group it
does not show under that group (the cost is the runs times the rows shown, both bounded).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy import ColumnElement, String, any_, case, func, literal, select, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import InstrumentedAttribute, Session

from state.enums import DagRunState, TaskInstanceState
from state.models import DagRun, TaskInstance


@dataclass(frozen=True)
class RunSummary:
    """One run as a list of runs shows it."""

    run_id: str
    state: DagRunState
    run_type: str
    logical_date: dt.datetime | None
    created_at: dt.datetime
    start_date: dt.datetime | None
    end_date: dt.datetime | None

    @property
    def when(self) -> dt.datetime:
        """The time a person knows the run by: its logical date, else when it was made."""
        return self.logical_date or self.created_at


_SUMMARY_COLUMNS = (
    DagRun.run_id,
    DagRun.state,
    DagRun.run_type,
    DagRun.logical_date,
    DagRun.created_at,
    DagRun.start_date,
    DagRun.end_date,
)


def _summary(row: Sequence[object]) -> RunSummary:
    run_id, state, run_type, logical, created, start, end = row
    return RunSummary(
        str(run_id),
        DagRunState(str(state)),
        str(run_type),
        logical if isinstance(logical, dt.datetime) else None,
        created if isinstance(created, dt.datetime) else dt.datetime.now(dt.UTC),
        start if isinstance(start, dt.datetime) else None,
        end if isinstance(end, dt.datetime) else None,
    )


def latest_runs(
    session: Session, dag_ids: Sequence[str], per_dag: int
) -> dict[str, list[RunSummary]]:
    """The newest ``per_dag`` runs of each DAG of ``dag_ids``, newest first (one statement)."""
    latest: dict[str, list[RunSummary]] = {dag_id: [] for dag_id in dag_ids}
    if not dag_ids or per_dag <= 0:
        return latest
    rank = func.row_number().over(partition_by=DagRun.dag_id, order_by=DagRun.id.desc())
    numbered = (
        select(DagRun.dag_id, DagRun.id, *_SUMMARY_COLUMNS, rank.label("rank"))
        .where(DagRun.dag_id.in_(list(dag_ids)))
        .subquery()
    )
    query = (
        select(numbered.c.dag_id, *(numbered.c[column.key] for column in _SUMMARY_COLUMNS))
        .where(numbered.c.rank <= per_dag)
        .order_by(numbered.c.dag_id, numbered.c.id.desc())
    )
    for dag_id, *rest in session.execute(query):
        latest[dag_id].append(_summary(rest))
    return latest


def recent_runs(session: Session, dag_id: str, limit: int) -> list[RunSummary]:
    """The DAG's newest ``limit`` runs, newest first (one statement)."""
    query = (
        select(*_SUMMARY_COLUMNS)
        .where(DagRun.dag_id == dag_id)
        .order_by(DagRun.id.desc())
        .limit(max(limit, 0))
    )
    return [_summary(row) for row in session.execute(query)]


@dataclass(slots=True)
class Cell:
    """One task in one run: how many of its task instances are in each state."""

    counts: dict[TaskInstanceState, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


_STATES = {state.value: state for state in TaskInstanceState}  # faster than the enum's lookup


def grid_cells(
    session: Session,
    dag_id: str,
    run_ids: Sequence[str],
    keyed: Mapping[str, str] | None = None,
) -> dict[tuple[str, str], Cell]:
    """Task instances of ``run_ids`` counted by state, by (run, task), in one query.

    With ``keyed`` (task id -> the key to count it under), only those tasks, each under its
    key: a grid's window counts a task group's tasks under the group, so the database adds up
    a group of 4,000 tasks and the answer has a row per run, group and state, not 4,000.
    """
    cells: dict[tuple[str, str], Cell] = {}
    if not run_ids or (keyed is not None and not keyed):
        return cells
    among = _among_array if session.get_bind().dialect.name == "postgresql" else _among_list
    key: ColumnElement[str] | InstrumentedAttribute[str] = TaskInstance.task_id
    conditions = [TaskInstance.dag_id == dag_id, among(TaskInstance.run_id, run_ids)]
    if keyed is not None:
        conditions.append(among(TaskInstance.task_id, list(keyed)))
        under: dict[str, list[str]] = {}
        for task_id, row_id in keyed.items():
            if row_id != task_id:
                under.setdefault(row_id, []).append(task_id)
        if under:
            whens = [(among(TaskInstance.task_id, ids), row_id) for row_id, ids in under.items()]
            key = case(*whens, else_=TaskInstance.task_id)
    # Grouped by position: PostgreSQL would not see the CASE in SELECT and in GROUP BY as one
    # expression, each having its own bound parameters (a subquery grouped outside cost more).
    query = (
        select(TaskInstance.run_id, key.label("row_id"), TaskInstance.state, func.count())
        .where(*conditions)
        .group_by(text("1, 2, 3"))
    )
    # On the session's connection: a plain SELECT of up to a window's cells, no ORM step, its
    # rows fetched at once (iterating a result fetches them one by one from the driver: a
    # window's 1,250 rows took longer so than the query itself).
    for run_id, row_id, state, count in session.connection().execute(query).all():
        found = cells.get((run_id, row_id))
        if found is None:
            cells[(run_id, row_id)] = Cell({_STATES[state]: count})
        else:
            found.counts[_STATES[state]] = count
    return cells


def _among_array(column: InstrumentedAttribute[str], values: Sequence[str]) -> ColumnElement[bool]:
    # One array parameter: an IN list is a parameter a value, and the driver's dialect writes
    # each with its cast on every request (2 ms of a grid's 75 ids, more than the query's plan).
    return column == any_(literal(list(values), ARRAY(String)))


def _among_list(column: InstrumentedAttribute[str], values: Sequence[str]) -> ColumnElement[bool]:
    return column.in_(list(values))
