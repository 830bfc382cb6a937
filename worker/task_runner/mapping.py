"""The task side of mapping: the items of a mapped task and each map index's own arguments.

The same rules as the scheduler's count (``state/engine/mapping.py``): a list maps item by item, a
dict by ``(key, value)`` pair, and several mapped arguments give their cross product, the last one
varying fastest. A ``.batch(size=k)`` task's results come back as one list per map index; a
downstream task sees them merged back into item order.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from tradewind.task import Task
from tradewind.xcom_arg import RETURN_VALUE, XComArg

Resolver = Callable[[Any], Any]


def is_expanded(task: Task) -> bool:
    """One task instance per item (``.expand``)."""
    return task.mapping is not None and task.mapping["kind"] == "expand"


def is_iterable(task: Task) -> bool:
    """Items run inside the task instance (``.iterate``, batched or not)."""
    return task.mapping is not None and task.mapping["kind"] == "iterate"


def batch_size(task: Task) -> int | None:
    return task.mapping.get("batch_size") if task.mapping is not None else None


def items_of(name: str, value: Any) -> list[Any]:
    """What one mapped argument gives: a list's items, a dict's ``(key, value)`` pairs."""
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, list | tuple):
        return list(value)
    raise TypeError(
        f"mapped argument {name!r} is a {type(value).__name__}: it must be a list or a dict"
    )


def mapped_lists(task: Task, resolve: Resolver) -> dict[str, list[Any]]:
    """Each mapped argument's items, upstream XComs resolved (one request per argument)."""
    assert task.mapping is not None
    return {name: items_of(name, resolve(value)) for name, value in task.mapping["kwargs"].items()}


def item_count(lists: dict[str, list[Any]]) -> int:
    return math.prod(len(items) for items in lists.values())


def all_arguments(lists: dict[str, list[Any]]) -> Iterator[dict[str, Any]]:
    """Every item's mapped arguments, in item order (the cross product)."""
    names = list(lists)
    for values in itertools.product(*lists.values()):
        yield dict(zip(names, values, strict=True))


def arguments_at(lists: dict[str, list[Any]], index: int) -> dict[str, Any]:
    """Item ``index``'s mapped arguments, without building the cross product."""
    if not 0 <= index < item_count(lists):
        raise IndexError(f"map index {index} is past the {item_count(lists)} items of the input")
    chosen: dict[str, Any] = {}
    for name in reversed(lists):
        index, position = divmod(index, len(lists[name]))
        chosen[name] = lists[name][position]
    return {name: chosen[name] for name in lists}


def batch_indexes(total: int, size: int, map_index: int) -> range:
    """The items map index ``map_index`` of a ``.batch(size=...)`` task runs: dealt round-robin.

    The scheduler made ``min(size, total)`` task instances, so every one of them gets an item.
    """
    return range(map_index, total, min(size, total) or 1)


def merge_batches(batches: list[Any]) -> list[Any]:
    """Results of a batched task (one list per map index) back in item order."""
    merged: list[Any] = []
    for row in itertools.zip_longest(*batches, fillvalue=_GAP):
        merged.extend(value for value in row if value is not _GAP)
    return merged


_GAP = object()


def read_upstream(arg: XComArg, client: Any) -> Any:
    """An upstream XCom as a downstream task sees it (a batched task's results merged)."""
    if arg.parts:  # XComArg.map() or .zip(): its parts read, then combined
        return arg.combine([read_upstream(part, client) for part in arg.parts])
    value = client.get_xcom(arg.task.task_id, arg.key, None)
    if batch_size(arg.task) is not None and isinstance(value, list):
        return merge_batches(value)
    return value


def expanded_arguments(task: Task, map_index: int, resolve: Resolver) -> dict[str, Any]:
    """The mapped arguments of one task instance of an ``.expand`` task."""
    if task.mapping is not None and task.mapping.get("per_index"):
        return {}  # a mapped group's task, or .expand_kwargs: tradewind picks each index's own
    return arguments_at(mapped_lists(task, resolve), map_index)


def check_mappable(task: Task, result: Any) -> None:
    """A result another task maps over must be a list or a dict: fail the task that made it."""
    # A map index's result is one item of the list its downstream maps over (second order).
    if isinstance(result, list | tuple | dict) or task.dag is None or is_expanded(task):
        return
    for other in task.dag.tasks.values():
        mapped = other.mapping["kwargs"].values() if other.mapping else ()
        if any(_is_result_of(value, task) for value in mapped):
            raise TypeError(
                f"task {task.task_id} returned a {type(result).__name__}, but {other.task_id} "
                "maps over it: return a list or a dict"
            )


def _is_result_of(value: Any, task: Task) -> bool:
    return isinstance(value, XComArg) and value.task is task and value.key == RETURN_VALUE


@dataclass(frozen=True)
class Item:
    """One item of an iterable task instance: its index, its arguments, their fingerprint."""

    index: int
    arguments: dict[str, Any]
    fingerprint: str


def fingerprint(shared_digest: bytes, arguments: dict[str, Any]) -> str:
    """A short digest of what an item runs with: a changed input never matches an old result."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(shared_digest + text.encode()).hexdigest()[:16]


def shared_digest(partial_kwargs: dict[str, Any]) -> bytes:
    """The digest of the arguments every item shares, computed once for all items."""
    text = json.dumps(partial_kwargs, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).digest()


def iterable_items(
    task: Task, map_index: int, lists: dict[str, list[Any]], partial: dict[str, Any]
) -> list[Item]:
    """The items this task instance runs (all of them, or its batch), fingerprinted."""
    digest = shared_digest(partial)
    total = item_count(lists)
    size = batch_size(task)
    wanted = range(total) if size is None else batch_indexes(total, size, map_index)
    return [
        Item(index, arguments, fingerprint(digest, arguments))
        for index, arguments in enumerate(all_arguments(lists))
        if index in wanted
    ]
