"""The DAG being defined right now (a stack: ``with DAG`` blocks may nest in tests)."""

from __future__ import annotations

from typing import Any

_STACK: list[Any] = []
#: Every DAG created since the loader last reset it: how a file's DAGs are found.
CREATED: list[Any] = []


def current_dag() -> Any:
    return _STACK[-1] if _STACK else None


def push(dag: Any) -> None:
    _STACK.append(dag)


def pop() -> None:
    _STACK.pop()
