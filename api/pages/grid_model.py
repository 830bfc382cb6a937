"""The grid of a DAG's page, as data: its rows (task groups and tasks, in the structure's
order, nested) and, for each row and run, one cell summarising its task instances.

A cell is counts by state (``state.overview.grid_cells``, one aggregate query for the whole
grid), so a task mapped over 2,000 items is one cell, drawn as a bar split by state; a
group's cell adds up its tasks'. Which state a cell shows first follows what needs a person's
eye first: a failure before a retry before running work before success.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from api.pages.graph_layout import short_name
from state.enums import TaskInstanceState
from state.overview import Cell, RunSummary
from state.structure import DagStructure

TI = TaskInstanceState

#: The state a cell of several task instances shows: the first of these it has.
SUMMARY_ORDER = (
    TI.FAILED,
    TI.UPSTREAM_FAILED,
    TI.UP_FOR_RETRY,
    TI.RUNNING,
    TI.QUEUED,
    TI.SCHEDULED,
    TI.NONE,
    TI.SKIPPED,
    TI.SUCCESS,
    TI.REMOVED,
)


def summary_state(counts: Mapping[TaskInstanceState, int]) -> TaskInstanceState | None:
    for state in SUMMARY_ORDER:
        if counts.get(state):
            return state
    return None


@dataclass(frozen=True)
class Row:
    """One row of the grid: a task, or a task group (``is_group``) with the rows under it."""

    row_id: str
    label: str
    depth: int
    is_group: bool = False
    mapped: bool = False
    parents: tuple[str, ...] = ()
    tasks: tuple[str, ...] = ()  # for a group: every task under it, nested groups' included


@dataclass(frozen=True)
class GridCell:
    """What one cell draws: its summary state, the counts, the link to the task."""

    state: TaskInstanceState | None
    counts: tuple[tuple[TaskInstanceState, int], ...] = ()
    total: int = 0
    href: str | None = None

    @property
    def title(self) -> str:
        if not self.counts:
            return "no task instance"
        return ", ".join(f"{state} {count}" for state, count in self.counts)

    def share(self, count: int) -> float:
        """The percentage of the cell's bar a state's count fills."""
        return 100.0 * count / self.total if self.total else 0.0


def grid_rows(structure: DagStructure) -> list[Row]:
    """Groups and tasks in the structure's order, each group before its own rows."""
    children: dict[str | None, list[tuple[str, bool]]] = {}
    for group_id, group in structure.groups.items():
        children.setdefault(group.parent, []).append((group_id, True))
    for task_id, spec in structure.tasks.items():
        children.setdefault(spec.group, []).append((task_id, False))
    rows: list[Row] = []
    _walk(structure, children, None, (), rows)
    return rows


def _walk(
    structure: DagStructure,
    children: Mapping[str | None, Sequence[tuple[str, bool]]],
    parent: str | None,
    parents: tuple[str, ...],
    rows: list[Row],
) -> list[str]:
    """Append the rows under ``parent``; return every task id under it."""
    tasks: list[str] = []
    for node_id, is_group in _ordered(structure, children.get(parent, ())):
        if is_group:
            group = structure.groups[node_id]
            at = len(rows)
            under = _walk(structure, children, node_id, (*parents, node_id), rows)
            label = group.display_name or short_name(node_id, group.parent, None)
            rows.insert(
                at, Row(node_id, label, len(parents), True, group.mapped, parents, tuple(under))
            )
            tasks += under
        else:
            spec = structure.tasks[node_id]
            label = short_name(node_id, spec.group, spec.display_name)
            rows.append(Row(node_id, label, len(parents), False, spec.mapping is not None, parents))
            tasks.append(node_id)
    return tasks


def _ordered(structure: DagStructure, nodes: Iterable[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """A level's groups and tasks in the order of their first task, upstream first."""
    order = {task_id: index for index, task_id in enumerate(structure.upstream_first())}

    def first_task(node: tuple[str, bool]) -> int:
        node_id, is_group = node
        if not is_group:
            return order[node_id]
        prefix = f"{node_id}."
        found = [index for task_id, index in order.items() if task_id.startswith(prefix)]
        return min(found, default=len(order))

    return sorted(nodes, key=first_task)


@dataclass
class Grid:
    """Rows by runs (oldest run first, as the grid reads left to right) and their cells."""

    dag_id: str
    rows: list[Row]
    runs: list[RunSummary]
    cells: dict[tuple[str, str], GridCell] = field(default_factory=dict)

    def cell(self, row_id: str, run_id: str) -> GridCell:
        return self.cells.get((row_id, run_id), GridCell(None))


def build_grid(
    dag_id: str,
    structure: DagStructure,
    runs_newest_first: Sequence[RunSummary],
    counts: Mapping[tuple[str, str], Cell],
) -> Grid:
    grid = Grid(dag_id, grid_rows(structure), list(reversed(runs_newest_first)))
    for run in grid.runs:
        for row in grid.rows:
            members = row.tasks if row.is_group else (row.row_id,)
            total: dict[TaskInstanceState, int] = {}
            for task_id in members:
                for state, count in counts.get((run.run_id, task_id), Cell()).counts.items():
                    total[state] = total.get(state, 0) + count
            if not total:
                continue
            ordered = tuple((s, total[s]) for s in SUMMARY_ORDER if total.get(s))
            href = None if row.is_group else f"/dags/{dag_id}/runs/{run.run_id}/tasks/{row.row_id}"
            grid.cells[(row.row_id, run.run_id)] = GridCell(
                summary_state(total), ordered, sum(total.values()), href
            )
    return grid
