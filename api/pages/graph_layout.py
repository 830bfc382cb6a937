"""The graph of a DAG's page, laid out on the server and drawn as SVG.

A small layered layout: each node's column is the length of the longest path to it from a node
with no upstream (so every edge runs left to right). A task group is either open (a box around
its members) or closed (one node standing for all its tasks, its edges those of its tasks).
Rows are packed per container (the DAG, or an open group): its members (tasks, closed groups,
open groups as whole boxes) are placed in order of their first column, each as high as the
columns it spans allow, so two boxes never overlap and a group's tasks stay inside its box
however the groups interleave. A large DAG opens with its groups closed.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from state.core import DagStructure, TaskInstanceState

NODE_WIDTH = 170
NODE_HEIGHT = 34
COLUMN_GAP = 70
ROW_GAP = 18
GROUP_PAD = 12
GROUP_LABEL = 18
MARGIN = 20
#: Up to this many tasks, a DAG's graph opens with every group open; above it, closed.
OPEN_GROUPS_UP_TO = 60
#: A state's rank when a closed group shows one state for its tasks: the most urgent wins.
_URGENCY = (
    "failed", "upstream_failed", "up_for_retry", "running", "awaiting_input", "deferred", "queued",
    "up_for_reschedule", "scheduled", "none", "skipped", "removed", "success",
)  # fmt: skip


@dataclass(frozen=True)
class Node:
    task_id: str
    label: str
    x: float
    y: float
    mapped: bool
    state: TaskInstanceState | None = None
    # A closed group: its id is ``task_id``, and it stands for ``size`` tasks.
    group: bool = False
    size: int = 1


@dataclass(frozen=True)
class Edge:
    path: str
    label: str = ""


@dataclass(frozen=True)
class Box:
    group_id: str
    label: str
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class Graph:
    nodes: list[Node]
    edges: list[Edge]
    boxes: list[Box]
    width: float
    height: float
    # The groups drawn open, and every group the DAG has (for the page's open/close links).
    open_groups: frozenset[str] = frozenset()
    groups: tuple[str, ...] = ()


def short_name(node_id: str, group: str | None, display_name: str | None) -> str:
    """What a box shows: the display name, else the id without its group's prefix."""
    if display_name:
        return display_name
    return node_id.removeprefix(f"{group}.") if group else node_id


def columns_of(structure: DagStructure) -> dict[str, int]:
    """Each task's column: the longest path to it from a task without upstream."""
    edges = {task_id: spec.downstream for task_id, spec in structure.tasks.items()}
    return _longest_paths(list(structure.tasks), edges) or dict.fromkeys(structure.tasks, 0)


def _longest_paths(
    nodes: list[str], downstream: Mapping[str, Collection[str]]
) -> dict[str, int] | None:
    """Each node's longest path from a node without upstream; None if there is a cycle."""
    pending = dict.fromkeys(nodes, 0)
    for node in nodes:
        for down in downstream.get(node, ()):
            if down in pending:
                pending[down] += 1
    ready = [node for node, count in pending.items() if count == 0]
    column = dict.fromkeys(ready, 0)
    done = 0
    while ready:
        node = ready.pop()
        done += 1
        for down in downstream.get(node, ()):
            if down not in pending:
                continue
            column[down] = max(column.get(down, 0), column[node] + 1)
            pending[down] -= 1
            if pending[down] == 0:
                ready.append(down)
    return column if done == len(nodes) else None


def _ancestors(structure: DagStructure, group: str | None) -> list[str]:
    """The groups holding a task of ``group``, outermost first."""
    chain = []
    while group is not None:
        chain.append(group)
        group = structure.groups[group].parent if group in structure.groups else None
    return chain[::-1]


@dataclass
class _View:
    """What is drawn: each task's stand-in (itself, or its outermost closed group)."""

    structure: DagStructure
    open_groups: frozenset[str]
    stand_in: dict[str, str] = field(default_factory=dict)
    container: dict[str, str | None] = field(default_factory=dict)  # drawn node -> open group
    members: dict[str, list[str]] = field(default_factory=dict)  # closed group -> its tasks

    def build(self) -> None:
        for task_id, spec in self.structure.tasks.items():
            holder: str | None = None
            stand_in = task_id
            for group in _ancestors(self.structure, spec.group):
                if group not in self.open_groups:
                    stand_in = group
                    self.members.setdefault(group, []).append(task_id)
                    break
                holder = group
            self.stand_in[task_id] = stand_in
            self.container.setdefault(stand_in, holder)

    def edges(self) -> dict[tuple[str, str], str]:
        """Drawn edges (upstream, downstream) and their labels; inside a closed group: none."""
        found: dict[tuple[str, str], str] = {}
        for down, spec in self.structure.tasks.items():
            for up in spec.upstream:
                if up not in self.stand_in:
                    continue
                pair = (self.stand_in[up], self.stand_in[down])
                if pair[0] != pair[1]:
                    label = spec.upstream_labels.get(up, "") if pair == (up, down) else ""
                    found[pair] = found.get(pair) or label
        return found


def layout(
    structure: DagStructure,
    states: Mapping[str, TaskInstanceState | None] | None = None,
    open_groups: Collection[str] | None = None,
) -> Graph:
    """The graph of ``structure``; ``open_groups``: the groups drawn open (None: all of them
    up to ``OPEN_GROUPS_UP_TO`` tasks, none above). A group opens only inside open parents."""
    if open_groups is None:
        small = len(structure.tasks) <= OPEN_GROUPS_UP_TO
        open_groups = structure.groups.keys() if small else ()
    view = _View(structure, frozenset(g for g in open_groups if g in structure.groups))
    view.build()
    drawn = list(view.container)
    pairs = view.edges()
    downstream: dict[str, list[str]] = {}
    for up, down in pairs:
        downstream.setdefault(up, []).append(down)
    column = _longest_paths(drawn, downstream)
    if column is None:  # closing a group made a cycle: its first task's column, compacted
        by_task = columns_of(structure)
        first = {node: by_task.get(node, 0) for node in drawn}
        for group, tasks in view.members.items():
            first[group] = min(by_task[task] for task in tasks)
        order = sorted(set(first.values()))
        column = {node: order.index(value) for node, value in first.items()}
    deepest = max((len(_ancestors(structure, g)) for g in view.open_groups), default=0)
    inset = deepest * (GROUP_PAD + 2)
    packer = _Packer(structure, view, column, inset)
    packer.place(None, 0.0)
    nodes = [
        _node(structure, view, node, packer, (states or {}))
        for node in sorted(drawn, key=lambda n: (column[n], packer.top[n]))
    ]
    at = {node.task_id: node for node in nodes}
    edges = [_edge(at[up], at[down], label) for (up, down), label in pairs.items()]
    width = max((n.x + NODE_WIDTH for n in nodes), default=0) + MARGIN + inset
    height = max((n.y + NODE_HEIGHT for n in nodes), default=0) + MARGIN
    height = max([height, *(box.y + box.height + MARGIN for box in packer.boxes)])
    boxes = sorted(packer.boxes, key=lambda box: len(_ancestors(structure, box.group_id)))
    return Graph(nodes, edges, boxes, width, height, view.open_groups, tuple(structure.groups))


def _node(
    structure: DagStructure,
    view: _View,
    node_id: str,
    packer: _Packer,
    states: Mapping[str, TaskInstanceState | None],
) -> Node:
    x, y = packer.x_of(packer.column[node_id]), packer.top[node_id]
    if node_id in view.members:
        tasks = view.members[node_id]
        spec = structure.groups[node_id]
        label = _group_label(node_id, spec.parent, spec.display_name)
        found = {str(states.get(task) or "none") for task in tasks}
        worst = min(found, key=lambda s: _URGENCY.index(s) if s in _URGENCY else len(_URGENCY))
        state = None if worst == "none" else TaskInstanceState(worst)
        return Node(node_id, label, x, y, spec.mapped, state, group=True, size=len(tasks))
    spec_t = structure.tasks[node_id]
    label = short_name(node_id, spec_t.group, spec_t.display_name)
    return Node(node_id, label, x, y, spec_t.mapping is not None, states.get(node_id))


def _group_label(group_id: str, parent: str | None, display_name: str | None) -> str:
    if parent:
        return display_name or group_id.removeprefix(f"{parent}.")
    return group_id


@dataclass
class _Packer:
    """Places each container's members from the top down, column by column (a skyline)."""

    structure: DagStructure
    view: _View
    column: dict[str, int]
    inset: int
    top: dict[str, float] = field(default_factory=dict)
    boxes: list[Box] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.step_x = NODE_WIDTH + COLUMN_GAP + 2 * self.inset
        self.children: dict[str | None, list[str]] = {}
        for node, holder in self.view.container.items():
            self.children.setdefault(holder, []).append(node)
        for group in self.view.open_groups:  # an open group is a member of its container
            parent = self.structure.groups[group].parent
            holder = parent if parent in self.view.open_groups else None
            self.children.setdefault(holder, []).append(group)
        order = {task_id: n for n, task_id in enumerate(self.structure.tasks)}
        self.span: dict[str, tuple[int, int]] = {}
        self.first: dict[str, int] = {}
        for node, holder in self.view.container.items():
            tasks = self.view.members.get(node, [node])
            self.first[node] = min(order[task] for task in tasks)
            self.span[node] = (self.column[node], self.column[node])
            while holder is not None:  # widen each open group around its members
                low, high = self.span.get(holder, (self.column[node], self.column[node]))
                self.span[holder] = (min(low, self.column[node]), max(high, self.column[node]))
                self.first[holder] = min(self.first.get(holder, self.first[node]), self.first[node])
                parent = self.structure.groups[holder].parent
                holder = parent if parent in self.view.open_groups else None

    def x_of(self, column: int) -> float:
        return MARGIN + self.inset + column * self.step_x

    def place(self, container: str | None, top: float) -> float:
        """Place ``container``'s members from ``top``; returns the height they take."""
        members = [m for m in self.children.get(container, []) if m in self.span]
        members.sort(key=lambda m: (self.span[m][0], self.first[m]))
        skyline: dict[int, float] = {}
        bottom = top
        for member in members:
            low, high = self.span[member]
            y = max([top, *(skyline.get(c, top) for c in range(low, high + 1))])
            if member in self.view.open_groups:
                inner = self.place(member, y + GROUP_LABEL + GROUP_PAD)
                height = GROUP_LABEL + 2 * GROUP_PAD + inner
                self._box(member, low, high, y, height)
            else:
                self.top[member] = y
                height = NODE_HEIGHT
            for c in range(low, high + 1):
                skyline[c] = y + height + ROW_GAP
            bottom = max(bottom, y + height)
        return bottom - top

    def _box(self, group: str, low: int, high: int, y: float, height: float) -> None:
        spec = self.structure.groups[group]
        pad = GROUP_PAD * (1 + self._open_below(group))
        left, right = self.x_of(low) - pad, self.x_of(high) + NODE_WIDTH + pad
        label = _group_label(group, spec.parent, spec.display_name)
        self.boxes.append(Box(group, label, left, y, right - left, height))

    def _open_below(self, group: str) -> int:
        inner = [g for g in self.view.open_groups if self.structure.groups[g].parent == group]
        return 1 + max((self._open_below(g) for g in inner), default=-1) if inner else 0


def _edge(start: Node, end: Node, label: str) -> Edge:
    x1, y1 = start.x + NODE_WIDTH, start.y + NODE_HEIGHT / 2
    x2, y2 = end.x - 4, end.y + NODE_HEIGHT / 2
    bend = max((x2 - x1) / 2, 20)
    return Edge(
        f"M{x1:.0f},{y1:.0f} C{x1 + bend:.0f},{y1:.0f} {x2 - bend:.0f},{y2:.0f} {x2:.0f},{y2:.0f}",
        label,
    )
