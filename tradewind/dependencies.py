"""Dependencies: ``>>`` / ``<<`` between tasks, their results, task groups, operators, lists of
them and edge labels; ``chain`` and ``cross_downstream``.

Everything that can sit on either side of ``>>`` says which tasks it stands for there: as the
upstream side its *leaves* (a group's tasks with no downstream inside it), as the downstream
side its *roots*. A group is read when the operator runs, as in Airflow: tasks added to it later
do not join dependencies already made.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Self

from tradewind.exceptions import DagDefinitionError

if TYPE_CHECKING:
    from tradewind.task import Task


class SetupTeardownMixin:
    """``.as_setup()``, ``.as_teardown(setups=...)`` and ``with t:`` (tradewind/setup_teardown.py),
    as Airflow's task results and operators have them."""

    def as_setup(self) -> Self:
        from tradewind.setup_teardown import as_setup

        return as_setup(self)  # type: ignore[no-any-return]

    def as_teardown(self, setups: Any = None, on_failure_fail_dagrun: bool = False) -> Self:
        from tradewind.setup_teardown import as_teardown

        return as_teardown(self, setups, on_failure_fail_dagrun)  # type: ignore[no-any-return]

    def __enter__(self) -> Self:
        from tradewind.setup_teardown import enter_scope

        return enter_scope(self)  # type: ignore[no-any-return]

    def __exit__(self, *exc: object) -> None:
        from tradewind.setup_teardown import exit_scope

        exit_scope(self)


class DependencyMixin:
    """``>>`` and ``<<`` for anything that stands for tasks (``roots`` and ``leaves``)."""

    def leaves(self) -> list[Task]:
        raise NotImplementedError

    def roots(self) -> list[Task]:
        raise NotImplementedError

    def set_downstream(self, other: Any) -> None:
        set_dependency(self, other)

    def set_upstream(self, other: Any) -> None:
        set_dependency(other, self)

    def __rshift__(self, other: Any) -> Any:
        set_dependency(self, other)
        return other

    def __lshift__(self, other: Any) -> Any:
        set_dependency(other, self)
        return other

    def __rrshift__(self, other: Any) -> Any:
        # `[a, b] >> self`: a list has no `>>`, so Python asks the right operand.
        set_dependency(other, self)
        return self

    def __rlshift__(self, other: Any) -> Any:
        set_dependency(self, other)
        return self


class EdgeModifier(DependencyMixin):
    """``Label("why")``: ``a >> Label("why") >> b`` makes ``a -> b`` and names that edge."""

    def __init__(self, label: str) -> None:
        if not isinstance(label, str) or not label:
            raise DagDefinitionError(f"Label() takes a non-empty string, got {label!r}")
        self.label = label
        self._upstream: list[Any] = []
        self._downstream: list[Any] = []

    def __repr__(self) -> str:
        return f"Label({self.label!r})"

    def add_upstream(self, value: Any) -> None:
        self._upstream.append(value)
        for downstream in self._downstream:
            link_all(value, downstream, self.label)

    def add_downstream(self, value: Any) -> None:
        self._downstream.append(value)
        for upstream in self._upstream:
            link_all(upstream, value, self.label)


Label = EdgeModifier


def set_dependency(upstream: Any, downstream: Any) -> None:
    """``upstream >> downstream`` for any two sides, a label between them included."""
    if isinstance(downstream, EdgeModifier):
        downstream.add_upstream(upstream)
    elif isinstance(upstream, EdgeModifier):
        upstream.add_downstream(downstream)
    else:
        link_all(upstream, downstream, None)


def link_all(upstream: Any, downstream: Any, label: str | None) -> None:
    for before in leaves_of(upstream):
        for after in roots_of(downstream):
            link(before, after, label)


def link(upstream: Task, downstream: Task, label: str | None = None) -> None:
    if upstream.dag is not downstream.dag:
        raise DagDefinitionError(
            f"{upstream.task_id} and {downstream.task_id} are in different DAGs"
        )
    upstream.downstream_task_ids.add(downstream.task_id)
    downstream.upstream_task_ids.add(upstream.task_id)
    if label is not None:
        downstream.upstream_labels[upstream.task_id] = label


def leaves_of(value: Any) -> list[Task]:
    """The tasks ``value`` stands for on the upstream side of ``>>``."""
    if isinstance(value, DependencyMixin):
        return value.leaves()
    return [task for item in _items(value) for task in leaves_of(item)]


def roots_of(value: Any) -> list[Task]:
    """The tasks ``value`` stands for on the downstream side of ``>>``."""
    if isinstance(value, DependencyMixin):
        return value.roots()
    return [task for item in _items(value) for task in roots_of(item)]


def _items(value: Any) -> Iterable[Any]:
    if isinstance(value, list | tuple | set):
        return value
    raise DagDefinitionError(
        f"cannot depend on {value!r}: use a task, a task's result, a task group, or a list of them"
    )


def chain(*elements: Any) -> None:
    """``chain(a, b, [c, d], e)``: each element before the next; two lists of the same length
    side by side pair up item by item (``[b, c]`` then ``[d, e]``: ``b >> d``, ``c >> e``)."""
    for before, after in itertools.pairwise(elements):
        if _is_list(before) and _is_list(after):
            if len(before) != len(after):
                raise DagDefinitionError(
                    f"chain(): lists side by side must have the same length, got "
                    f"{len(before)} and {len(after)}"
                )
            for up, down in zip(before, after, strict=True):
                set_dependency(up, down)
        else:
            set_dependency(before, after)


def cross_downstream(from_tasks: Sequence[Any], to_tasks: Any) -> None:
    """Every task of ``from_tasks`` before every task of ``to_tasks``."""
    for before in from_tasks:
        set_dependency(before, to_tasks)


def _is_list(value: Any) -> bool:
    return isinstance(value, list | tuple)
