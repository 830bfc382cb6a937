"""``XComArg``: the result of calling a task inside a DAG, standing for its future XCom."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tradewind.dependencies import DependencyMixin

if TYPE_CHECKING:
    from tradewind.task import Task

RETURN_VALUE = "return_value"


@dataclass(frozen=True)
class XComArg(DependencyMixin):
    """A reference to one XCom of an upstream task; passing it to a task makes the dependency."""

    task: Task
    key: str = RETURN_VALUE

    def __getitem__(self, key: str) -> XComArg:
        # Subscripting a multiple_outputs result picks the XCom pushed under that key.
        return XComArg(self.task, key)

    def roots(self) -> list[Task]:
        return [self.task]

    def leaves(self) -> list[Task]:
        return [self.task]

    def __iter__(self) -> Iterator[Any]:
        raise TypeError(
            "an XComArg is a future value: pass it to another task instead of iterating"
        )


def find_xcom_args(value: Any) -> Iterator[XComArg]:
    """Every XComArg inside nested lists, tuples and dicts."""
    if isinstance(value, XComArg):
        yield value
    elif isinstance(value, list | tuple | set):
        for item in value:
            yield from find_xcom_args(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from find_xcom_args(item)
