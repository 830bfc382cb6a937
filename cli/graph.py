"""A DAG's tasks and dependencies as a rich tree (``dags show``) or as Graphviz dot.

Both read the DAG's structure (``state.core.structure.DagStructure``): task ids, each task's
``upstream`` ids and options. Its key order is not kept by every store (PostgreSQL's JSONB sorts
keys shortest first), so the order shown is worked out again: ``upstream_first``.
"""

from __future__ import annotations

from collections.abc import Mapping
from graphlib import CycleError, TopologicalSorter

from rich.text import Text
from rich.tree import Tree

from state.core import DagStructure, GroupSpec, TaskSpec


def upstream_first(tasks: Mapping[str, TaskSpec]) -> list[str]:
    """The task ids of a DAG's stored structure, each after its upstream tasks (ties by id).

    Worked out from the ``upstream`` lists: the structure's own key order does not survive
    PostgreSQL's JSONB, which stores an object's keys shortest first.
    """
    graph = {task_id: sorted(tasks[task_id].upstream) for task_id in sorted(tasks)}
    try:
        return list(TopologicalSorter(graph).static_order())
    except CycleError:  # a stored structure has none; shown in id order rather than failing
        return sorted(tasks)


def downstream_map(structure: DagStructure) -> dict[str, list[str]]:
    """Each task's direct downstream tasks, in the DAG's (topological) order."""
    tasks = structure.tasks
    order = upstream_first(tasks)
    downstream: dict[str, list[str]] = {task_id: [] for task_id in order}
    for task_id in order:
        for upstream in tasks[task_id].upstream:
            downstream[upstream].append(task_id)
    return downstream


def task_label(task_id: str, spec: TaskSpec) -> Text:
    """The task id, then what differs from the defaults (retries, trigger rule, mapping...)."""
    notes = []
    if spec.retries:
        notes.append(f"retries={spec.retries}")
    if spec.trigger_rule != "all_success":
        notes.append(f"trigger_rule={spec.trigger_rule}")
    if spec.queue != "default":
        notes.append(f"queue={spec.queue}")
    if spec.mapping is not None:
        notes.append(spec.mapping.kind)
    if spec.runtime:
        notes.append("runtime")
    if spec.kind != "task" or spec.is_setup or spec.is_teardown:  # control flow (branching...)
        notes.append("setup" if spec.is_setup else "teardown" if spec.is_teardown else spec.kind)
    label = Text(task_id, style="bold")
    if spec.display_name:
        label.append(f" ({spec.display_name})")
    if notes:
        label.append("  " + " ".join(notes), style="dim")
    return label


def dag_tree(structure: DagStructure) -> Tree:
    """Roots first, each task under every task it depends on.

    A task with several upstreams appears under each; its own downstream tasks are expanded
    the first time only (``...`` after), so a wide diamond does not print exponentially.
    """
    tasks = structure.tasks
    downstream = downstream_map(structure)
    shown = (
        f"{structure.dag_id} ({structure.display_name})"
        if structure.display_name
        else structure.dag_id
    )
    title = Text(f"{shown} ({len(tasks)} tasks)", style="bold cyan")
    if structure.description:
        title.append(f"\n{structure.description}", style="italic")
    tree = Tree(title)
    expanded: set[str] = set()

    def add(parent: Tree, task_id: str, upstream: str | None) -> None:
        label = task_label(task_id, tasks[task_id])
        edge = tasks[task_id].upstream_labels.get(upstream or "")
        if edge:
            label = Text(f"[{edge}] ", style="magenta") + label
        if task_id in expanded and downstream[task_id]:
            parent.add(label.append(" ...", style="dim"))
            return
        expanded.add(task_id)
        node = parent.add(label)
        for child in downstream[task_id]:
            add(node, child, task_id)

    for task_id in upstream_first(tasks):
        if not tasks[task_id].upstream:
            add(tree, task_id, None)
    return tree


def _quote(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def dag_dot(structure: DagStructure) -> str:
    """Graphviz dot of the DAG, left to right: ``dags show X --format dot | dot -Tpng``."""
    tasks = structure.tasks
    lines = [f"digraph {_quote(structure.dag_id)} {{", "  rankdir=LR;", "  node [shape=box];"]
    order = upstream_first(tasks)
    groups = structure.groups
    in_group = {task_id for task_id in order if tasks[task_id].group in groups}
    lines += [f"  {_quote(task_id)};" for task_id in order if task_id not in in_group]
    lines += _clusters(groups, tasks, None, "  ")
    for task_id in order:
        labels = tasks[task_id].upstream_labels
        for upstream in tasks[task_id].upstream:
            edge = f" [label={_quote(labels[upstream])}]" if upstream in labels else ""
            lines.append(f"  {_quote(upstream)} -> {_quote(task_id)}{edge};")
    lines.append("}")
    return "\n".join(lines)


def _clusters(
    groups: Mapping[str, GroupSpec], tasks: Mapping[str, TaskSpec], parent: str | None, indent: str
) -> list[str]:
    """A task group as a Graphviz cluster, the groups inside it nested in it."""
    lines = []
    for group_id in sorted(g for g, spec in groups.items() if spec.parent == parent):
        lines.append(f"{indent}subgraph {_quote('cluster_' + group_id)} {{")
        lines.append(f"{indent}  label={_quote(group_id)};")
        members = [t for t in tasks if tasks[t].group == group_id]
        lines += [f"{indent}  {_quote(task_id)};" for task_id in sorted(members)]
        lines += _clusters(groups, tasks, group_id, indent + "  ")
        lines.append(f"{indent}}}")
    return lines
