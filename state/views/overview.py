"""What the UI's DAG pages read in bulk: each DAG's latest runs, and a grid's cells.

Both are one statement whatever the size behind them: the latest runs of a page of DAGs are
numbered per DAG by a window function and cut in SQL; a grid's cells are the task instances
of its runs counted by (run, task, state) with GROUP BY, so a task mapped over 2,000 items is
one row per state, not 2,000 rows, and a window of a grid's rows counts the tasks of a group it
does not show under that group (the cost is the runs times the rows shown, both bounded).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy import ColumnElement, case, func, select, text, union_all
from sqlalchemy.orm import InstrumentedAttribute, Session

from state.core import (
    DagRun,
    DagRunState,
    TaskInstance,
    TaskInstanceHistory,
    TaskInstanceState,
    statements_of,
)


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
    """The newest ``per_dag`` runs of each DAG of ``dag_ids``, newest first (one statement).

    One ``UNION ALL`` branch per DAG, each read backwards from ``ix_dag_run_dag_id_id`` and
    stopped after ``per_dag`` rows: a window over every run of the page's DAGs grew with their
    history (128 ms for 100 DAGs of 1,000 runs; ``bench/history.py``).
    """
    latest: dict[str, list[RunSummary]] = {dag_id: [] for dag_id in dag_ids}
    if not dag_ids or per_dag <= 0:
        return latest
    branches = [
        select(DagRun.dag_id, DagRun.id, *_SUMMARY_COLUMNS)
        .where(DagRun.dag_id == dag_id)
        .order_by(DagRun.id.desc())
        .limit(per_dag)
        .subquery()
        for dag_id in dict.fromkeys(dag_ids)
    ]
    # Each limited branch is a subquery of its own: SQLite refuses LIMIT inside a compound.
    runs = union_all(*(select(branch) for branch in branches)).subquery()
    query = select(runs.c.dag_id, *(runs.c[column.key] for column in _SUMMARY_COLUMNS))
    for dag_id, *rest in session.execute(query.order_by(runs.c.dag_id, runs.c.id.desc())):
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


class GridCounts(Mapping[tuple[str, str], Cell]):
    """A grid's task instances counted by (run, row, state), kept by run: each run's rows in
    one state (``one``: the state and its count) apart from those in several (``several``).

    Most cells are one task instance in one state, so a run's rows in one state arrive from
    the database as one list and become one dict in one call; a cell is looked up by run and
    row (``states``) or, as a mapping, by (run, row).
    """

    def __init__(self) -> None:
        self.one: dict[str, dict[str, tuple[TaskInstanceState, int]]] = {}
        self.several: dict[str, dict[str, dict[TaskInstanceState, int]]] = {}

    @classmethod
    def of(cls, cells: Mapping[tuple[str, str], Mapping[TaskInstanceState, int]]) -> GridCounts:
        """The counts given cell by cell: {(run, row): {state: count}}."""
        by_run: dict[str, list[tuple[TaskInstanceState, int, list[str]]]] = {}
        for (run_id, row_id), states in cells.items():
            by_run.setdefault(run_id, []).extend((s, n, [row_id]) for s, n in states.items())
        made = cls()
        for run_id, groups in by_run.items():
            made.add_run(run_id, groups)
        return made

    def states(self, run_id: str, row_id: str) -> Mapping[TaskInstanceState, int] | None:
        """The cell's count by state, or None when it has no task instance."""
        one = self.one.get(run_id)
        found = one.get(row_id) if one is not None else None
        if found is not None:
            return {found[0]: found[1]}
        several = self.several.get(run_id)
        return several.get(row_id) if several is not None else None

    def add_run(
        self, run_id: str, groups: Sequence[tuple[TaskInstanceState, int, list[str]]]
    ) -> None:
        """A run's rows as the database groups them: (state, count, the rows with it)."""
        one: dict[str, tuple[TaskInstanceState, int]] = {}
        for state, count, rows in groups:
            one.update(dict.fromkeys(rows, (state, count)))
        if len(one) < sum(len(rows) for _state, _count, rows in groups):  # rows in several states
            seen = Counter(row for _state, _count, rows in groups for row in rows)
            several: dict[str, dict[TaskInstanceState, int]] = {}
            for state, count, rows in groups:
                for row in rows:
                    if seen[row] > 1:
                        several.setdefault(row, {})[state] = count
            for row in several:
                del one[row]
            self.several[run_id] = several
        self.one[run_id] = one

    def __getitem__(self, key: tuple[str, str]) -> Cell:
        found = self.states(*key)
        if found is None:
            raise KeyError(key)
        return Cell(dict(found))

    def __iter__(self) -> Iterator[tuple[str, str]]:
        for by_run in (self.one, self.several):
            for run_id, rows in by_run.items():
                yield from ((run_id, row_id) for row_id in rows)

    def __len__(self) -> int:
        return sum(len(rows) for by_run in (self.one, self.several) for rows in by_run.values())


def grid_cells(
    session: Session,
    dag_id: str,
    run_ids: Sequence[str],
    keyed: Mapping[str, str] | None = None,
) -> GridCounts:
    """Task instances of ``run_ids`` counted by state, by (run, task), in one query.

    With ``keyed`` (task id -> the key to count it under), only those tasks, each under its
    key: a grid's window counts a task group's tasks under the group, so the database adds up
    a group of 4,000 tasks and the answer has a row per run, group and state, not 4,000.
    """
    cells = GridCounts()
    if not run_ids or (keyed is not None and not keyed):
        return cells
    dialect = statements_of(session)
    among = dialect.any_of
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
    # expression, each having its own bound parameters.
    counted = (
        select(
            TaskInstance.run_id, key.label("row_id"), TaskInstance.state, func.count().label("n")
        )
        .where(*conditions)
        .group_by(text("1, 2, 3"))
        .subquery()
    )
    # Then the rows of each (run, state, count) as one list: a run of 50 rows in one state is
    # one row of the answer, not 50 (each row of an answer cost the driver, the result and this
    # loop more than the database's second grouping).
    listed = dialect.aggregate_list(counted.c.row_id)
    query = select(counted.c.run_id, counted.c.state, counted.c.n, listed).group_by(
        counted.c.run_id, counted.c.state, counted.c.n
    )
    by_run: dict[str, list[tuple[TaskInstanceState, int, list[str]]]] = {}
    # On the session's connection: a plain SELECT, no ORM step, fetched at once.
    for run_id, state, count, rows in session.connection().execute(query).all():
        by_run.setdefault(run_id, []).append((_STATES[state], count, rows))
    for run_id, groups in by_run.items():
        cells.add_run(run_id, groups)
    return cells


#: A grid cell's earlier tries: (run id, task id) -> [(try number, state kept), ...] in order.
EarlierTries = dict[tuple[str, str], list[tuple[int, str | None]]]


def earlier_tries(
    session: Session, dag_id: str, run_ids: Sequence[str], task_ids: Sequence[str]
) -> EarlierTries:
    """The earlier tries of the unmapped task instances of ``task_ids`` in ``run_ids``: what
    the grid's try markers show (one statement, on the history's unique key; a task instance
    that never gave a try way has no row there, so most grids read nothing)."""
    tries: EarlierTries = {}
    if not run_ids or not task_ids:
        return tries
    among = statements_of(session).any_of
    history = TaskInstanceHistory
    query = (
        select(history.run_id, history.task_id, history.try_number, history.state)
        .where(
            history.dag_id == dag_id,
            among(history.run_id, list(run_ids)),
            among(history.task_id, list(task_ids)),
            history.map_index == -1,
        )
        .order_by(history.try_number)
    )
    for run_id, task_id, try_number, state in session.connection().execute(query).all():
        tries.setdefault((run_id, task_id), []).append((try_number, state))
    return tries
