"""Mapping a task over lists: ``.expand``, ``.iterate``, ``.batch(size=k).iterate``, ``.partial``.

- ``t.expand(x=xs)``: one task instance per item (map index 0..n-1), made by the scheduler once
  the lists are known (``state/engine/mapping.py``).
- ``t.iterate(x=xs)``: ONE task instance that runs every item, ``task_concurrency`` at a time,
  with per-round checkpoints (``worker/task_runner/iterable.py``).
- ``t.batch(size=k).iterate(x=xs)``: k task instances (map index 0..k-1), items dealt
  round-robin; the downstream task still sees one list in item order.
- ``t.partial(y=1)``: arguments every item shares.

Argument semantics are Airflow's: several lists give their cross product, the last list varying
fastest (``itertools.product`` in the order of the keyword arguments); a dict gives its
``(key, value)`` pairs. The mapping is kept on the ``Task`` as plain data (``Task.mapping``):
``kind``, ``batch_size``, ``sources`` (for each mapped argument, the upstream XCom it comes from
or its literal length: what the scheduler needs), and ``kwargs`` (the values, for the worker).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from tradewind.exceptions import DagDefinitionError
from tradewind.xcom_arg import XComArg, ZipXComArg

if TYPE_CHECKING:
    from tradewind.task import TaskDecorator

EXPAND: Final = "expand"
ITERATE: Final = "iterate"
#: The one mapped argument of ``.expand_kwargs``: each item holds a map index's arguments.
KWARGS_LIST: Final = "__kwargs__"


def source_of(name: str, value: Any) -> dict[str, Any]:
    """Where a mapped argument's items come from: an upstream XCom, or a literal of known size."""
    if isinstance(value, ZipXComArg):
        parts = [source_of(name, part) for part in value.parts]
        return {"zip": parts, "zip_longest": value.longest}
    if isinstance(value, XComArg) and value.parts:  # .map(): as many items as its source
        return source_of(name, value.parts[0])
    if isinstance(value, XComArg):
        return {"task_id": value.task.task_id, "key": value.key}
    if isinstance(value, list | tuple | dict):
        return {"length": len(value)}
    raise DagDefinitionError(
        f"mapped argument {name!r} must be a list, a tuple, a dict or a task's result, "
        f"got {type(value).__name__}"
    )


def build_mapping(kind: str, mapped: dict[str, Any], batch_size: int | None) -> dict[str, Any]:
    if not mapped:
        raise DagDefinitionError(f".{kind}() needs at least one keyword argument to map over")
    return {
        "kind": kind,
        "batch_size": batch_size,
        "sources": {name: source_of(name, value) for name, value in mapped.items()},
        "kwargs": dict(mapped),
    }


class PartialTask:
    """A task with some arguments fixed, waiting for ``.expand`` / ``.iterate`` / ``.batch``."""

    def __init__(self, decorator: TaskDecorator, partial_kwargs: dict[str, Any]) -> None:
        self.decorator = decorator
        self.partial_kwargs = partial_kwargs

    def expand(self, **mapped: Any) -> XComArg:
        """One task instance per item."""
        return self._map(EXPAND, mapped, None)

    def expand_kwargs(self, kwargs_list: Any) -> XComArg:
        """One task instance per dict of ``kwargs_list`` (a list of dicts, or a task's result
        that is one), each called with that dict's keyword arguments."""
        name = self.decorator.default_task_id
        if isinstance(kwargs_list, list | tuple):
            for item in kwargs_list:
                if not isinstance(item, dict) and not isinstance(item, XComArg):
                    raise DagDefinitionError(
                        f"{name}: .expand_kwargs() takes a list of dicts, got an item "
                        f"{type(item).__name__}"
                    )
        mapping = build_mapping(EXPAND, {KWARGS_LIST: kwargs_list}, None)
        mapping["per_index"] = True
        self._check(EXPAND, {})
        task = self.decorator._add_task((), dict(self.partial_kwargs), mapping)
        return XComArg(task)

    def iterate(self, **mapped: Any) -> XComArg:
        """One task instance running every item, ``task_concurrency`` at a time."""
        return self._map(ITERATE, mapped, None)

    def batch(self, size: int) -> BatchedTask:
        """``size`` task instances, each iterating over every ``size``-th item."""
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise DagDefinitionError(f".batch(size=...) takes an integer >= 1, got {size!r}")
        return BatchedTask(self, size)

    def _map(self, kind: str, mapped: dict[str, Any], batch_size: int | None) -> XComArg:
        self._check(kind, mapped)
        mapping = build_mapping(kind, mapped, batch_size)
        return XComArg(self.decorator._add_task((), dict(self.partial_kwargs), mapping))

    def _check(self, kind: str, mapped: dict[str, Any]) -> None:
        name = self.decorator.default_task_id
        both = sorted(mapped.keys() & self.partial_kwargs.keys())
        if both:
            raise DagDefinitionError(f"{name}: {both} given to both .partial() and .{kind}()")
        options = self.decorator.options
        if options.command is not None and kind != "expand":
            # Items of an iterable task run inside one Python process
            # (worker/task_runner/iterable.py).
            raise DagDefinitionError(f"{name}: .{kind}() is for Python tasks, not runtime tasks")
        if options.multiple_outputs:
            raise DagDefinitionError(f"{name}: a mapped task cannot have multiple_outputs=True")


class BatchedTask:
    """``t.batch(size=k)``: call ``.iterate(...)`` on it."""

    def __init__(self, partial: PartialTask, size: int) -> None:
        self.partial = partial
        self.size = size

    def iterate(self, **mapped: Any) -> XComArg:
        return self.partial._map(ITERATE, mapped, self.size)
