"""The graph's layout (api/pages/graph_layout.py): groups as boxes that never overlap, closed
groups as one node standing for their tasks, and a large DAG opening with its groups closed."""

from __future__ import annotations

import itertools
from pathlib import Path

from api.pages.graph_layout import NODE_HEIGHT, NODE_WIDTH, Box, Graph, layout
from state.core import parse_structure
from state.core.enums import TaskInstanceState as TI
from tradewind.loader import DagBag

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "dags"


def _large(open_groups: set[str] | None = None) -> Graph:
    dag = DagBag.collect(EXAMPLES).dags["large_example"]
    return layout(parse_structure(dag.structure()), open_groups=open_groups)


def _overlap(a: Box, b: Box) -> bool:
    return not (
        a.x + a.width <= b.x
        or b.x + b.width <= a.x
        or a.y + a.height <= b.y
        or b.y + b.height <= a.y
    )


def test_open_groups_of_interleaved_waves_never_overlap_and_hold_their_tasks() -> None:
    dag = DagBag.collect(EXAMPLES).dags["large_example"]
    graph = layout(
        parse_structure(dag.structure()), open_groups={f"region_{n:02d}" for n in range(20)}
    )
    assert len(graph.boxes) == 20 and len(graph.nodes) == 400
    for a, b in itertools.combinations(graph.boxes, 2):
        assert not _overlap(a, b), (a.group_id, b.group_id)
    boxes = {box.group_id: box for box in graph.boxes}
    for node in graph.nodes:
        box = boxes[node.task_id.split(".")[0]]
        assert box.x <= node.x and node.x + NODE_WIDTH <= box.x + box.width
        assert box.y <= node.y and node.y + NODE_HEIGHT <= box.y + box.height


def test_a_large_dag_opens_with_its_groups_closed_as_one_node_each() -> None:
    graph = _large()
    assert graph.open_groups == frozenset() and not graph.boxes
    assert [node.size for node in graph.nodes] == [20] * 20
    assert all(node.group for node in graph.nodes)
    assert len(graph.edges) == 3 * 25  # wave to wave: 5 groups to 5 groups, three times


def test_a_closed_group_shows_its_most_urgent_state_and_keeps_its_edges() -> None:
    structure = parse_structure(
        {
            "dag_id": "d",
            "groups": {"g": {"tasks": ["g.a", "g.b"]}},
            "tasks": {
                "start": {"downstream": ["g.a"]},
                "g.a": {"upstream": ["start"], "downstream": ["g.b"], "group": "g"},
                "g.b": {"upstream": ["g.a"], "downstream": ["end"], "group": "g"},
                "end": {"upstream": ["g.b"]},
            },
        }
    )
    states = {"start": TI.SUCCESS, "g.a": TI.SUCCESS, "g.b": TI.FAILED}
    closed = layout(structure, states, open_groups=())
    nodes = {node.task_id: node for node in closed.nodes}
    assert set(nodes) == {"start", "g", "end"}
    assert nodes["g"].state == TI.FAILED and nodes["g"].size == 2
    assert nodes["start"].x < nodes["g"].x < nodes["end"].x
    assert len(closed.edges) == 2
    opened = layout(structure, states, open_groups=("g",))
    assert {node.task_id for node in opened.nodes} == {"start", "g.a", "g.b", "end"}
    assert [box.group_id for box in opened.boxes] == ["g"]


def test_closing_a_group_that_makes_a_cycle_still_draws_every_node() -> None:
    structure = parse_structure(
        {
            "dag_id": "d",
            "groups": {"g": {"tasks": ["g.a", "g.b"]}},
            "tasks": {
                "g.a": {"downstream": ["out"], "group": "g"},
                "out": {"upstream": ["g.a"], "downstream": ["g.b"]},
                "g.b": {"upstream": ["out"], "group": "g"},
            },
        }
    )
    graph = layout(structure, open_groups=())
    assert {node.task_id for node in graph.nodes} == {"g", "out"}
