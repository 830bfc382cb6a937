"""The grid of a DAG's page, as data: its rows (task groups and tasks, in the structure's
order, nested), a window of them, and, for each row of the window and run, one cell
summarising its task instances.

A cell is counts by state (``state.views.overview.grid_cells``, one aggregate query for the window:
a group's tasks are added up by the database), so a task mapped over 2,000 items is one cell,
drawn as a bar split by state. Which state a cell shows first follows what needs a person's
eye first: a failure before a retry before running work before success.

What a request costs is bounded by the window (``GRID_ROWS`` rows by the runs shown), not by
the DAG: the row layout is derived once per structure version and kept with it, the query
counts only the window's rows, and the page draws only them, with links to the other rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from markupsafe import Markup, escape

from api.pages.graph_layout import short_name
from api.pages.runs import duration
from state.core import DagStructure, TaskInstanceState, utcnow
from state.views import EarlierTries, GridCounts, RunSummary

TI = TaskInstanceState

#: The rows one window of the grid shows (the rest is a link away).
GRID_ROWS = 50

#: The state a cell of several task instances shows: the first of these it has.
SUMMARY_ORDER = (
    TI.FAILED,
    TI.UPSTREAM_FAILED,
    TI.UP_FOR_RETRY,
    TI.UP_FOR_RESCHEDULE,
    TI.AWAITING_INPUT,
    TI.DEFERRED,
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


@dataclass(frozen=True, slots=True)
class GridCell:
    """What one cell draws: its summary state and the counts (the link is its line's)."""

    state: TaskInstanceState | None
    counts: tuple[tuple[TaskInstanceState, int], ...] = ()
    total: int = 0
    mapped: bool = False  # drawn as a bar even with one task instance
    #: For the shared cells of one task instance (``_ONE``), their HTML around the link and
    #: the title's row id, written once: a grid draws most of its cells from them.
    parts: tuple[str, str] | None = None

    @property
    def title(self) -> str:
        if not self.counts:
            return "no task instance"
        return ", ".join(f"{state} {count}" for state, count in self.counts)

    @property
    def bars(self) -> list[tuple[TaskInstanceState, str]]:
        """Each state of the cell with the share of the bar it fills, as a CSS width."""
        return [(state, f"{100.0 * count / self.total:.1f}%") for state, count in self.counts]


BLANK = GridCell(None)
#: The cell of one unmapped task instance in each state: most cells of a grid, made once.
_ONE = {
    state: GridCell(
        state,
        ((state, 1),),
        1,
        parts=(
            f'<td><a class="cell state-{state}" href="',
            f': {state}" data-state="{state}"></a></td>',
        ),
    )
    for state in TaskInstanceState
}


def grid_rows(structure: DagStructure) -> tuple[Row, ...]:
    """Groups and tasks in the structure's order, each group before its own rows.

    Derived once per structure version (kept in its ``memo``): the grid's poll asks for it
    every few seconds, and a DAG of 5,000 tasks takes tens of milliseconds to lay out.
    """
    rows: tuple[Row, ...] | None = structure.memo.get("grid_rows")
    if rows is None:
        rows = structure.memo["grid_rows"] = tuple(_layout(structure))
    return rows


def _layout(structure: DagStructure) -> list[Row]:
    order = {task_id: index for index, task_id in enumerate(structure.upstream_first())}
    first = _first_tasks(structure, order)
    children: dict[str | None, list[tuple[int, str, bool]]] = {}
    for group_id, group in structure.groups.items():
        children.setdefault(group.parent, []).append(
            (first.get(group_id, len(order)), group_id, True)
        )
    for task_id, spec in structure.tasks.items():
        children.setdefault(spec.group, []).append((order[task_id], task_id, False))
    for level in children.values():
        level.sort(key=lambda node: node[0])  # stable: groups before tasks on a tie
    rows: list[Row] = []
    _walk(structure, children, None, (), rows)
    return rows


def _first_tasks(structure: DagStructure, order: Mapping[str, int]) -> dict[str, int]:
    """Each group's earliest task in ``order``, its nested groups' included (one pass)."""
    first: dict[str, int] = {}
    for task_id, spec in structure.tasks.items():
        index, group_id = order[task_id], spec.group
        # An ancestor's first is never later than its child's: stop at the first that holds.
        while group_id is not None and first.get(group_id, len(order)) > index:
            first[group_id] = index
            group = structure.groups.get(group_id)
            group_id = group.parent if group is not None else None
    return first


def _walk(
    structure: DagStructure,
    children: Mapping[str | None, Sequence[tuple[int, str, bool]]],
    parent: str | None,
    parents: tuple[str, ...],
    rows: list[Row],
) -> list[str]:
    """Append the rows under ``parent``; return every task id under it."""
    tasks: list[str] = []
    for _index, node_id, is_group in children.get(parent, ()):
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


@dataclass(frozen=True)
class RowWindow:
    """Rows ``start`` (from 0) to ``start + limit`` of ``total``: the part of the grid drawn."""

    start: int
    limit: int
    total: int

    @classmethod
    def at(cls, page: int, total: int, limit: int = GRID_ROWS) -> RowWindow:
        """The window of page ``page`` (from 1); past the last page, the last page."""
        last_page = max(1, -(-total // limit))
        return cls((min(max(page, 1), last_page) - 1) * limit, limit, total)

    @property
    def page(self) -> int:
        return self.start // self.limit + 1

    @property
    def first(self) -> int:
        """The first row shown, counted from 1 as a person reads "rows 1 to 50 of 200"."""
        return min(self.total, self.start + 1)

    @property
    def last(self) -> int:
        return min(self.total, self.start + self.limit)

    @property
    def previous(self) -> int | None:
        return self.page - 1 if self.start > 0 else None

    @property
    def next(self) -> int | None:
        return self.page + 1 if self.start + self.limit < self.total else None

    def of(self, rows: Sequence[Row]) -> list[Row]:
        """The window's rows, after the groups it starts inside of (their heads are on an
        earlier page: without them a page would open on tasks of no visible group)."""
        shown = list(rows[self.start : self.start + self.limit])
        if not shown or not shown[0].parents:
            return shown
        heads = {row.row_id: row for row in rows[: self.start] if row.is_group}
        return [heads[group] for group in shown[0].parents if group in heads] + shown


def counted_keys(rows: Sequence[Row]) -> dict[str, str]:
    """What ``state.views.overview.grid_cells`` counts for a window, and under which row: each task
    of the window under itself, each other task of a group of the window under the deepest
    such group (``build_grid`` adds the rows under a group to its cell)."""
    keyed: dict[str, str] = {}
    for row in sorted((row for row in rows if row.is_group), key=lambda row: -row.depth):
        for task_id in row.tasks:
            keyed.setdefault(task_id, row.row_id)
    keyed.update((row.row_id, row.row_id) for row in rows if not row.is_group)
    return keyed


@dataclass
class GridLine:
    """One row of the window and its cells, one a run, oldest run first."""

    row: Row
    cells: list[GridCell]
    #: For a task's row, each run's link to its task instances less the task's id, escaped
    #: (one list for every line of the grid); a group's cells link nowhere.
    run_links: Sequence[str] | None = None
    #: For a task's row, each run's earlier tries of its task instance (most cells: none).
    tries: Sequence[Sequence[tuple[int, str | None]]] = ()

    def href(self, index: int) -> str | None:
        """The link of the cell of run ``index`` (from the oldest), if it has one."""
        if self.run_links is None or not self.cells[index].total:
            return None
        return f"{self.run_links[index]}{escape(self.row.row_id)}"

    @property
    def markup(self) -> Markup:
        """The row's cells as HTML (``<td>`` each), written here rather than in the template.

        A cell is the grid's unit, repeated up to 5,000 times a page: as template code it cost
        about 0.1 ms a cell in escaping alone; here each id is escaped once per row and each run
        once per grid, and a cell is one format of strings already escaped.
        """
        row_id = str(escape(self.row.row_id))
        if self.run_links is None:
            return Markup("".join(_cell_html(row_id, cell, "") for cell in self.cells))
        if any(self.tries):
            return Markup(
                "".join(
                    _tried_cell_html(row_id, cell, f"{link}{row_id}", earlier)
                    if earlier and cell.total == 1
                    else _cell_html(row_id, cell, f' href="{link}{row_id}"')
                    for cell, link, earlier in zip(
                        self.cells, self.run_links, self.tries, strict=True
                    )
                )
            )
        return Markup(
            "".join(
                f'{parts[0]}{link}{row_id}" title="{row_id}{parts[1]}'
                if (parts := cell.parts) is not None
                else _cell_html(row_id, cell, f' href="{link}{row_id}"')
                for cell, link in zip(self.cells, self.run_links, strict=True)
            )
        )


_BLANK_HTML = '<td><span class="cell blank" title="no task instance"></span></td>'


def _cell_html(row_id: str, cell: GridCell, href: str) -> str:
    if not cell.total:
        return _BLANK_HTML
    if cell.total > 1 or cell.mapped:
        bars = "".join(f'<span class="state-{s}" style="width:{w}"></span>' for s, w in cell.bars)
        return (
            f'<td><a class="cell multi"{href} title="{row_id}: {cell.title}"'
            f' data-state="{cell.state}">{bars}</a></td>'
        )
    state = cell.state.value if cell.state is not None else ""
    return (
        f'<td><a class="cell state-{state}"{href} title="{row_id}: {state}"'
        f' data-state="{state}"></a></td>'
    )


def _tried_cell_html(
    row_id: str, cell: GridCell, href: str, earlier: Sequence[tuple[int, str | None]]
) -> str:
    """A task instance's cell with a try marker: how many tries it has had, each earlier one's
    state in its title (the details panel lists them with their times)."""
    state = cell.state.value if cell.state is not None else ""
    tries = len(earlier) + 1
    before = ", ".join(f"try {number} {kept or 'not started'}" for number, kept in earlier)
    return (
        f'<td><a class="cell state-{state} tried" href="{href}"'
        f' title="{row_id}: {state}, try {tries} (before: {escape(before)})"'
        f' data-state="{state}" data-tries="{tries}">'
        f'<span class="try-mark">{tries}</span></a></td>'
    )


@dataclass
class Grid:
    """A window of rows by runs (oldest run first, as the grid reads left to right)."""

    dag_id: str
    window: RowWindow
    runs: list[RunSummary]
    lines: list[GridLine] = field(default_factory=list)
    continued: frozenset[str] = frozenset()  # the groups whose heads are on an earlier page

    def bar_height(self, run: RunSummary) -> int:
        """The height of a run's bar, in pixels: its duration against the longest shown (a run
        not started is the shortest bar, one still going counts up to now)."""
        longest = max((_seconds(r) for r in self.runs), default=0.0)
        share = _seconds(run) / longest if longest else 1.0
        return round(RUN_BAR_MIN + (RUN_BAR_MAX - RUN_BAR_MIN) * share)

    def took(self, run: RunSummary) -> str:
        return duration(run.start_date, run.end_date) or "not started"


#: A run bar's height in pixels: the shortest (or a run not started) and the longest shown.
RUN_BAR_MIN, RUN_BAR_MAX = 6, 34


def _seconds(run: RunSummary) -> float:
    if run.start_date is None:
        return 0.0
    return ((run.end_date or utcnow()) - run.start_date).total_seconds()


def build_grid(
    dag_id: str,
    window: RowWindow,
    rows: Sequence[Row],
    runs_newest_first: Sequence[RunSummary],
    counts: GridCounts,
    tries: EarlierTries | None = None,
) -> Grid:
    """The grid of ``rows`` (a window's), from counts keyed as ``counted_keys`` asks them.

    A group's cell adds up the counts kept under its own id (its tasks outside the window)
    and those of the rows of the window under it. ``tries``: the earlier tries of the task
    instances of the window (``state.views.earlier_tries``), shown as try markers.
    """
    heads = len(rows) - (window.last - window.first + 1)  # the groups ``RowWindow.of`` added
    continued = frozenset(row.row_id for row in rows[: max(heads, 0)])
    grid = Grid(dag_id, window, list(reversed(runs_newest_first)), continued=continued)
    run_ids = [run.run_id for run in grid.runs]
    dag = escape(dag_id)
    run_links = [f"/dags/{dag}/runs/{escape(run_id)}/tasks/" for run_id in run_ids]
    columns = [(counts.one.get(run_id, {}), counts.several.get(run_id, {})) for run_id in run_ids]
    under: dict[str, list[str]] = {row.row_id: [row.row_id] for row in rows}
    for row in rows:
        for parent in row.parents:
            if parent in under:
                under[parent].append(row.row_id)
    for row in rows:
        keys = under[row.row_id]
        if len(keys) == 1:  # a task, or a group whose rows are all outside the window
            cells = [_one_cell(one, several, keys[0], row.mapped) for one, several in columns]
        else:
            cells = [_summed_cell(run_id, keys, counts, row.mapped) for run_id in run_ids]
        line = GridLine(row, cells, None if row.is_group else run_links)
        if tries and not row.is_group and not row.mapped:
            line.tries = [tries.get((run_id, row.row_id), []) for run_id in run_ids]
        grid.lines.append(line)
    return grid


def _one_cell(
    one: Mapping[str, tuple[TaskInstanceState, int]],
    several: Mapping[str, Mapping[TaskInstanceState, int]],
    row_id: str,
    mapped: bool,
) -> GridCell:
    found = one.get(row_id)
    if found is not None:  # most cells: one task instance, or all in one state
        state, count = found
        if count == 1 and not mapped:
            return _ONE[state]
        return GridCell(state, (found,), count, mapped)
    states = several.get(row_id)
    return _ordered(states, mapped) if states else BLANK


def _summed_cell(run_id: str, keys: Sequence[str], counts: GridCounts, mapped: bool) -> GridCell:
    total: dict[TaskInstanceState, int] = {}
    for key in keys:
        for state, count in (counts.states(run_id, key) or {}).items():
            total[state] = total.get(state, 0) + count
    return _ordered(total, mapped) if total else BLANK


def _ordered(counts: Mapping[TaskInstanceState, int], mapped: bool) -> GridCell:
    ordered = tuple((s, counts[s]) for s in SUMMARY_ORDER if s in counts)
    return GridCell(ordered[0][0], ordered, sum(counts.values()), mapped)
