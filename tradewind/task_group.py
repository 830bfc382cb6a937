"""Task groups: ``with TaskGroup("g"):`` and ``@task_group``, as Airflow 3 defines them.

A group prefixes the ids of what it holds (``g.t``, and ``outer.inner.t`` for groups inside
groups), gives its tasks its ``default_args``, and stands for its tasks in dependencies: its
roots on the downstream side of ``>>``, its leaves on the upstream side. Groups are authoring
only: the scheduler sees plain tasks, and the structure keeps the groups for display.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tradewind import dag_context
from tradewind.dependencies import DependencyMixin
from tradewind.exceptions import DagDefinitionError
from tradewind.task import check_default_args

if TYPE_CHECKING:
    from tradewind.task import Task


class TaskGroup(DependencyMixin):
    """A named set of tasks (and groups) inside a DAG."""

    def __init__(
        self,
        group_id: str,
        *,
        prefix_group_id: bool = True,
        tooltip: str = "",
        default_args: dict[str, Any] | None = None,
        parent_group: TaskGroup | None = None,
        dag: Any = None,
        add_suffix_on_collision: bool = False,
        ui_color: str | None = None,
        ui_fgcolor: str | None = None,
        group_display_name: str | None = None,
    ) -> None:
        self.dag = dag or dag_context.current_dag()
        if self.dag is None:
            raise DagDefinitionError(f"task group {group_id!r} made outside a DAG")
        if not isinstance(group_id, str) or not group_id or "." in group_id:
            raise DagDefinitionError(
                f"a task group id is a non-empty string without '.', got {group_id!r}"
            )
        self.parent = parent_group or dag_context.current_group(self.dag)
        self.label = group_id
        self.prefix_group_id = prefix_group_id
        self.tooltip = tooltip
        self.display_name = group_display_name
        self.ui_color, self.ui_fgcolor = ui_color, ui_fgcolor  # for the UI's graph
        self.default_args = check_default_args(f"task group {group_id}", default_args)
        self.task_ids: list[str] = []
        # Kept as they join (``DAG.add_task``, here): ``>>`` on a group reads them, never the DAG.
        self.tasks: list[Task] = []
        self.children: list[TaskGroup] = []
        #: Set on a mapped group (``.expand``): its tasks are mapped over these arguments.
        self.mapping: dict[str, Any] | None = None
        self.group_id = self.dag.add_group(self, self._full_id(group_id), add_suffix_on_collision)
        if self.parent is not None:
            self.parent.children.append(self)

    def __repr__(self) -> str:
        return f"<TaskGroup {self.group_id}>"

    def _full_id(self, label: str) -> str:
        return self.parent.child_id(label) if self.parent is not None else label

    def child_id(self, label: str) -> str:
        """The id of a task or group named ``label`` inside this group."""
        return f"{self.group_id}.{label}" if self.prefix_group_id else label

    def __enter__(self) -> TaskGroup:
        dag_context.push_group(self)
        return self

    def __exit__(self, *exc: object) -> None:
        dag_context.pop_group()

    def merged_default_args(self) -> dict[str, Any]:
        """The group's ``default_args`` over its parents' (the DAG's come first)."""
        parent = self.parent
        inherited = parent.merged_default_args() if parent is not None else self.dag.default_args
        return {**inherited, **self.default_args}

    def all_tasks(self) -> list[Task]:
        """Its tasks and those of the groups inside it."""
        found = list(self.tasks)
        for child in self.children:
            found.extend(child.all_tasks())
        return found

    def roots(self) -> list[Task]:
        inside = self.all_tasks()
        ids = {task.task_id for task in inside}
        return [task for task in inside if not task.upstream_task_ids & ids]

    def leaves(self) -> list[Task]:
        inside = self.all_tasks()
        ids = {task.task_id for task in inside}
        return [task for task in inside if not task.downstream_task_ids & ids]

    def structure(self) -> dict[str, Any]:
        return {
            "parent": self.parent.group_id if self.parent is not None else None,
            "label": self.label,
            "tooltip": self.tooltip,
            "display_name": self.display_name,
            "ui_color": self.ui_color,
            "ui_fgcolor": self.ui_fgcolor,
            "tasks": sorted(self.task_ids),
            "mapped": self.mapping is not None,
        }


class TaskGroupDecorator:
    """A function decorated with ``@task_group``: each call makes a group and runs the function
    inside it; the call returns what the function returns, or the group when that is None."""

    def __init__(self, function: Callable[..., Any], group_kwargs: dict[str, Any]) -> None:
        self.function = function
        self.group_kwargs = group_kwargs
        functools.update_wrapper(self, function)

    def override(self, **changes: Any) -> TaskGroupDecorator:
        return TaskGroupDecorator(self.function, {**self.group_kwargs, **changes})

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self.make_group() as group:
            returned = self.function(*args, **kwargs)
        return group if returned is None else returned

    def make_group(self, mapping: dict[str, Any] | None = None) -> TaskGroup:
        """A new group for one call, its id made unique (``g``, ``g__1``...)."""
        options = {"add_suffix_on_collision": True, **self.group_kwargs}
        group_id = options.pop("group_id", None) or self.function.__name__
        options.setdefault("tooltip", (self.function.__doc__ or "").strip())
        if mapping is not None:
            from tradewind.mapped_group import check_not_nested

            dag = options.get("dag") or dag_context.current_dag()
            parent = options.get("parent_group") or dag_context.current_group(dag)
            if parent is not None:
                check_not_nested(parent, f"the mapped task group {group_id}")
        group = TaskGroup(group_id, **options)
        group.mapping = mapping
        return group

    def expand(self, **mapped: Any) -> Any:
        return self.partial().expand(**mapped)

    def partial(self, **kwargs: Any) -> Any:
        from tradewind.mapped_group import PartialTaskGroup

        return PartialTaskGroup(self, kwargs)


def task_group(python_callable: Callable[..., Any] | None = None, **group_kwargs: Any) -> Any:
    """``@task_group`` / ``@task_group(group_id=..., tooltip=..., default_args=...)``."""
    if python_callable is not None:
        return TaskGroupDecorator(python_callable, group_kwargs)
    return lambda function: TaskGroupDecorator(function, group_kwargs)
