"""``XComArg``: the result of calling a task inside a DAG, standing for its future XCom."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tradewind.dependencies import DependencyMixin, SetupTeardownMixin
from tradewind.exceptions import DagDefinitionError

if TYPE_CHECKING:
    from tradewind.task import Task

RETURN_VALUE = "return_value"
#: ``zip()`` without a fillvalue: as many items as the shortest part.
NO_FILL: Any = type("NoFill", (), {"__repr__": lambda self: "NO_FILL"})()


@dataclass(frozen=True)
class XComArg(SetupTeardownMixin, DependencyMixin):
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
        return MapXComArg(self.task, self.key, (self,), function)

    def zip(self, *others: XComArg, fillvalue: Any = NO_FILL) -> XComArg:
        """The items of this XCom and of ``others`` side by side, as lists: as many as the
        shortest has, or as the longest with ``fillvalue`` in the gaps."""
        if not others or not all(isinstance(other, XComArg) for other in others):
            raise DagDefinitionError("XComArg.zip() takes one or more task results to zip with")
        return ZipXComArg(self.task, self.key, (self, *others), fillvalue)

    @property
    def parts(self) -> tuple[XComArg, ...]:
        """What a derived XCom (``map``, ``zip``) is read from; none for a stored one."""
        return ()

    def combine(self, values: list[Any]) -> Any:
        """A derived XCom's value from its parts' values."""
        raise NotImplementedError


@dataclass(frozen=True)
class _Derived(XComArg):
    """An XComArg computed from others where it is read; ``task`` is its first part's."""

    sources: tuple[XComArg, ...] = ()

    @property
    def parts(self) -> tuple[XComArg, ...]:
        return self.sources


@dataclass(frozen=True)
class MapXComArg(_Derived):
    """Each item of an XCom through a function (``XComArg.map``)."""

    function: Callable[[Any], Any] = lambda item: item

    def combine(self, values: list[Any]) -> Any:
        [value] = values
        return None if value is None else [self.function(item) for item in _items(value)]


@dataclass(frozen=True)
class ZipXComArg(_Derived):
    """Several XComs' items side by side (``XComArg.zip``)."""

    fillvalue: Any = NO_FILL

    @property
    def longest(self) -> bool:
        return self.fillvalue is not NO_FILL

    def combine(self, values: list[Any]) -> Any:
        lists = [[] if value is None else _items(value) for value in values]
        if self.longest:
            return [list(row) for row in itertools.zip_longest(*lists, fillvalue=self.fillvalue)]
        return [list(row) for row in zip(*lists, strict=False)]


def _items(value: Any) -> list[Any]:
    return list(value.items()) if isinstance(value, dict) else list(value)


def find_xcom_args(value: Any) -> Iterator[XComArg]:
    """Every XComArg inside nested lists, tuples and dicts (a zip's parts, not the zip)."""
    if isinstance(value, XComArg) and value.parts:
        for part in value.parts:
            yield from find_xcom_args(part)
    elif isinstance(value, XComArg):
        yield value
    elif isinstance(value, list | tuple | set):
        for item in value:
            yield from find_xcom_args(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from find_xcom_args(item)


def pull_xcom(arg: XComArg, ti: Any) -> Any:
    """``arg``'s value read through the running task's ``ti`` (from its parts for a ``map`` or
    a ``zip``): what a reader in the task process sees."""
    if arg.parts:
        return arg.combine([pull_xcom(part, ti) for part in arg.parts])
    return ti.xcom_pull(task_ids=arg.task.task_id, key=arg.key)
