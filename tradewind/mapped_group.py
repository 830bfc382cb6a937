"""Mapped task groups: ``@task_group`` with ``.expand(x=...)`` / ``.partial(...)``, as in Airflow.

Every task of a mapped group is mapped over the group's arguments: the scheduler makes one task
instance per item for each of them (the structure's ``mapping`` carries the group's sources and
``group``). In a task of the group, an argument of the group (``MappedArgument``) is that map
index's item, and the result of another task of the same group is that task's XCom at the same
map index; a task outside the group sees the list of every map index's result, as for any mapped
task.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tradewind.exceptions import DagDefinitionError
from tradewind.mapping import EXPAND, build_mapping
from tradewind.xcom_arg import XComArg

if TYPE_CHECKING:
    from tradewind.task import Task
    from tradewind.task_group import TaskGroup, TaskGroupDecorator


class PartialTaskGroup:
    """A ``@task_group`` function with some arguments fixed, waiting for ``.expand``."""

    def __init__(self, decorator: TaskGroupDecorator, partial_kwargs: dict[str, Any]) -> None:
        self.decorator = decorator
        self.partial_kwargs = partial_kwargs

    def expand(self, **mapped: Any) -> Any:
        """Make the group with one map index per item of the cross product of ``mapped``;
        returns what the function returns (every map index's result downstream), or the group."""
        name = self.decorator.function.__name__
        both = sorted(mapped.keys() & self.partial_kwargs.keys())
        if both:
            raise DagDefinitionError(f"task group {name}: {both} given to .partial() and .expand()")
        mapping = build_mapping(EXPAND, mapped, None)
        group = self.decorator.make_group(mapping)
        arguments = {key: MappedArgument(group, key) for key in mapped}
        with group:
            returned = self.decorator.function(**self.partial_kwargs, **arguments)
        return group if returned is None else returned


@dataclass(frozen=True, eq=False)
class MappedArgument:
    """An argument of a mapped group inside it: each map index's own item."""

    group: TaskGroup
    name: str

    def sources(self) -> dict[str, Any]:
        """The group's mapped arguments, as given to ``.expand``."""
        return dict((self.group.mapping or {}).get("kwargs", {}))


def group_mapping(group: TaskGroup | None) -> dict[str, Any] | None:
    """The mapping a task added to ``group`` gets: its mapped group's (the nearest)."""
    while group is not None:
        if group.mapping is not None:
            return {**group.mapping, "group": group.group_id, "per_index": True}
        group = group.parent
    return None


def check_not_nested(group: TaskGroup | None, what: str) -> None:
    outer = group_mapping(group)
    if outer is not None:
        raise DagDefinitionError(
            f"{what} inside the mapped task group {outer['group']} is not supported: "
            "map the group, or the task outside it"
        )


def item_at(lists: dict[str, list[Any]], index: int) -> dict[str, Any]:
    """Map index ``index``'s arguments: the cross product of ``lists``, the last varying fastest."""
    combos = list(itertools.product(*lists.values()))
    if not 0 <= index < len(combos):
        raise IndexError(f"map index {index} is past the {len(combos)} items of the group")
    return dict(zip(lists, combos[index], strict=True))


def _items(name: str, value: Any) -> list[Any]:
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, list | tuple):
        return list(value)
    raise TypeError(f"the mapped group argument {name!r} is a {type(value).__name__}, not a list")


def group_resolver(task: Task, context: dict[str, Any], resolve: Any) -> Any:
    """How the arguments of ``task`` resolve: per map index for its mapped group's values."""
    mapping = task.mapping or {}
    group_id = mapping.get("group")
    if group_id is None:
        return resolve
    map_index = context["ti"].map_index

    def resolve_in_group(value: Any) -> Any:
        if isinstance(value, MappedArgument):
            lists = {k: _items(k, resolve(v)) for k, v in value.sources().items()}
            return item_at(lists, map_index)[value.name]
        if isinstance(value, XComArg) and (value.task.mapping or {}).get("group") == group_id:
            return context["ti"].xcom_pull(
                task_ids=value.task.task_id, key=value.key, map_indexes=map_index
            )
        return resolve(value)

    return resolve_in_group
