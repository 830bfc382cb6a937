"""The graph of a DAG's page, laid out on the server and drawn as SVG.

A small layered layout: each task's column is the length of the longest path from a task
with no upstream (so every edge runs left to right); within a column, tasks are ordered by
their group and then by the mean row of their upstream tasks (one barycentre pass), which
keeps a group's tasks together and most edges short. A task group is the box around its
tasks; an edge is a cubic curve from the right side of one box to the left of the next.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from state.core import DagStructure, TaskInstanceState

NODE_WIDTH = 170
NODE_HEIGHT = 34
COLUMN_GAP = 70
ROW_GAP = 18
GROUP_PAD = 12
GROUP_LABEL = 18
MARGIN = 20


@dataclass(frozen=True)
class Node:
    task_id: str
    label: str
    x: float
    y: float
    mapped: bool
    state: TaskInstanceState | None = None


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


def short_name(node_id: str, group: str | None, display_name: str | None) -> str:
    """What a box shows: the display name, else the id without its group's prefix."""
    if display_name:
        return display_name
    return node_id.removeprefix(f"{group}.") if group else node_id


def columns_of(structure: DagStructure) -> dict[str, int]:
    """Each task's column: the longest path to it from a task without upstream."""
    column: dict[str, int] = {}
    pending = {task_id: len(spec.upstream) for task_id, spec in structure.tasks.items()}
    ready = [task_id for task_id, count in pending.items() if count == 0]
    while ready:
        task_id = ready.pop()
        column.setdefault(task_id, 0)
        for down in structure.tasks[task_id].downstream:
            if down not in pending:
                continue
            column[down] = max(column.get(down, 0), column[task_id] + 1)
            pending[down] -= 1
            if pending[down] == 0:
                ready.append(down)
    for task_id in structure.tasks:  # a cycle cannot be stored, but never lose a task
        column.setdefault(task_id, 0)
    return column


def _rows(structure: DagStructure, column: Mapping[str, int]) -> dict[str, int]:
    """Each task's row within its column: by group, then by its upstream's mean row."""
    by_column: dict[int, list[str]] = {}
    for task_id in structure.tasks:
        by_column.setdefault(column[task_id], []).append(task_id)
    row: dict[str, int] = {}
    for index in sorted(by_column):

        def key(task_id: str) -> tuple[str, float]:
            upstream = [row[up] for up in structure.tasks[task_id].upstream if up in row]
            centre = sum(upstream) / len(upstream) if upstream else 0.0
            return (structure.tasks[task_id].group or "", centre)

        for position, task_id in enumerate(sorted(by_column[index], key=key)):
            row[task_id] = position
    return row


def _depth(structure: DagStructure, group: str | None) -> int:
    depth = 0
    while group is not None:
        depth += 1
        group = structure.groups[group].parent if group in structure.groups else None
    return depth


def layout(
    structure: DagStructure, states: Mapping[str, TaskInstanceState | None] | None = None
) -> Graph:
    column = columns_of(structure)
    row = _rows(structure, column)
    deepest = max((_depth(structure, spec.group) for spec in structure.tasks.values()), default=0)
    inset = deepest * (GROUP_PAD + 2)
    step_x, step_y = NODE_WIDTH + COLUMN_GAP + 2 * inset, NODE_HEIGHT + ROW_GAP + GROUP_LABEL
    nodes = {
        task_id: Node(
            task_id,
            short_name(task_id, spec.group, spec.display_name),
            MARGIN + inset + column[task_id] * step_x,
            MARGIN + inset + GROUP_LABEL + row[task_id] * step_y,
            spec.mapping is not None,
            (states or {}).get(task_id),
        )
        for task_id, spec in structure.tasks.items()
    }
    edges = [
        _edge(nodes[up], nodes[down], spec.upstream_labels.get(up, ""))
        for down, spec in structure.tasks.items()
        for up in spec.upstream
        if up in nodes
    ]
    boxes = _boxes(structure, nodes)
    width = max((n.x + NODE_WIDTH for n in nodes.values()), default=0) + MARGIN + inset
    height = max((n.y + NODE_HEIGHT for n in nodes.values()), default=0) + MARGIN + inset
    return Graph(list(nodes.values()), edges, boxes, width, height)


def _edge(start: Node, end: Node, label: str) -> Edge:
    x1, y1 = start.x + NODE_WIDTH, start.y + NODE_HEIGHT / 2
    x2, y2 = end.x - 4, end.y + NODE_HEIGHT / 2
    bend = max((x2 - x1) / 2, 20)
    return Edge(
        f"M{x1:.0f},{y1:.0f} C{x1 + bend:.0f},{y1:.0f} {x2 - bend:.0f},{y2:.0f} {x2:.0f},{y2:.0f}",
        label,
    )


def _boxes(structure: DagStructure, nodes: Mapping[str, Node]) -> list[Box]:
    """A box per group around its tasks (nested groups' too), outer groups drawn first."""
    boxes = []
    for group_id, group in structure.groups.items():
        prefix = f"{group_id}."
        members = [node for task_id, node in nodes.items() if task_id.startswith(prefix)]
        if not members:
            continue
        depth = _depth(structure, group_id)
        pad = GROUP_PAD * (1 + _nesting_below(structure, group_id))
        left = min(n.x for n in members) - pad
        top = min(n.y for n in members) - pad - GROUP_LABEL
        right = max(n.x for n in members) + NODE_WIDTH + pad
        bottom = max(n.y for n in members) + NODE_HEIGHT + pad
        label = (
            group.display_name or group_id.removeprefix(f"{group.parent}.")
            if group.parent
            else group_id
        )
        boxes.append((depth, Box(group_id, label, left, top, right - left, bottom - top)))
    return [box for _, box in sorted(boxes, key=lambda pair: pair[0])]


def _nesting_below(structure: DagStructure, group_id: str) -> int:
    """How many levels of groups sit inside ``group_id`` (its box pads around theirs)."""
    inner = [g for g, spec in structure.groups.items() if spec.parent == group_id]
    return 1 + max((_nesting_below(structure, g) for g in inner), default=-1) if inner else 0
