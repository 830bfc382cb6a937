"""The DAG being defined right now (a stack: ``with DAG`` blocks may nest in tests)."""

from __future__ import annotations

from typing import Any

_STACK: list[Any] = []
#: Every DAG created since the loader last reset it: how a file's DAGs are found.
CREATED: list[Any] = []


def current_dag() -> Any:
    """The innermost ``with DAG``; else the DAG of an open task group (``TaskGroup(dag=d)``)."""
    if _STACK:
        return _STACK[-1]
    return _GROUPS[-1].dag if _GROUPS else None


def push(dag: Any) -> None:
    _STACK.append(dag)


def pop() -> None:
    _STACK.pop()


#: Task groups being defined right now, innermost last.
_GROUPS: list[Any] = []


def current_group(dag: Any) -> Any:
    """The innermost open task group of ``dag``; None outside every group."""
    for group in reversed(_GROUPS):
        if group.dag is dag:
            return group
    return None


def push_group(group: Any) -> None:
    _GROUPS.append(group)


def pop_group() -> None:
    _GROUPS.pop()
