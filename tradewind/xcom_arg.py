"""``XComArg``: the result of calling a task inside a DAG, standing for its future XCom."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tradewind.dependencies import DependencyMixin
from tradewind.exceptions import DagDefinitionError

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

    def map(self, function: Callable[[Any], Any]) -> XComArg:
        """The same XCom with ``function`` applied to each item, where it is read (in the task
        that reads it): ``t.expand(x=numbers.map(str))`` maps over the strings."""
        if not callable(function):
            raise DagDefinitionError(f"XComArg.map() takes a function, got {function!r}")
        return MapXComArg(self.task, self.key, (function,))

    def zip(self, *others: Any, fillvalue: Any = None) -> XComArg:
        raise DagDefinitionError(
            "XComArg.zip() is not supported by Tradewind yet: expand over the lists, or zip "
            "them in a task"
        )

    def apply(self, value: Any) -> Any:
        """The value a reader sees once the XCom is read (as stored, for a plain XComArg)."""
        return value


@dataclass(frozen=True)
class MapXComArg(XComArg):
    """An XComArg whose items go through functions when read (``XComArg.map``)."""

    functions: tuple[Callable[[Any], Any], ...] = ()

    def map(self, function: Callable[[Any], Any]) -> XComArg:
        if not callable(function):
            raise DagDefinitionError(f"XComArg.map() takes a function, got {function!r}")
        return MapXComArg(self.task, self.key, (*self.functions, function))

    def apply(self, value: Any) -> Any:
        if value is None:
            return None
        items = list(value.items()) if isinstance(value, dict) else list(value)
        for function in self.functions:
            items = [function(item) for item in items]
        return items


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
