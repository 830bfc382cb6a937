"""``@task.branch`` and ``@task.short_circuit``: tasks whose result chooses what runs after them.

The task process turns the result into the ids to follow (``Choice.follow``) and sends them with
its success; the store skips the others with the end (``state.engine.end_plan.skipped_by`` decides
which, as Airflow does), and the trigger rules carry the skips further. The task never touches
SQL, and the choice is checked where the DAG is at hand: an id the DAG does not have fails the
branch task with one line naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal

from tradewind.exceptions import DagDefinitionError
from tradewind.task import Task, TaskDecorator, TaskOptions, task, task_options


class BranchError(ValueError):
    """A branch returned something that names no task or task group of its DAG."""


@dataclass(frozen=True)
class Choice:
    """What kind of choice a task makes, and what its result means."""

    kind: Literal["branch", "short_circuit"]
    ignore_downstream_trigger_rules: bool = True

    def follow(self, chooser: Task, result: Any) -> tuple[str, ...] | None:
        """The ids to follow (empty: none); None when a short circuit lets everything run."""
        if self.kind == "short_circuit":
            return None if result else ()
        ids = _branch_ids(chooser, result)
        known = chooser.dag.tasks.keys() | chooser.dag.task_groups.keys()
        unknown = [task_id for task_id in ids if task_id not in known]
        if unknown:
            downstream = ", ".join(sorted(chooser.downstream_task_ids)) or "none"
            raise BranchError(
                f"branch task {chooser.task_id} returned {', '.join(map(repr, unknown))}: not a "
                f"task or task group of DAG {chooser.dag.dag_id} (its downstream tasks: "
                f"{downstream})"
            )
        return ids


def _branch_ids(chooser: Task, result: Any) -> tuple[str, ...]:
    if result is None:
        return ()
    if isinstance(result, str):
        return (result,)
    if isinstance(result, Iterable) and all(isinstance(item, str) for item in result):
        return tuple(result)
    raise BranchError(
        f"branch task {chooser.task_id} must return a task id, a list of task ids or None, "
        f"got {type(result).__name__}"
    )


class ChoosingDecorator(TaskDecorator):
    """A ``TaskDecorator`` whose tasks carry a ``Choice`` (kept through ``.override``)."""

    def __init__(
        self,
        function: Callable[..., Any] | None,
        options: TaskOptions,
        explicit: Iterable[str],
        choice: Choice,
    ) -> None:
        super().__init__(function, options, explicit)
        self.choice = choice

    def override(self, **changes: Any) -> TaskDecorator:
        choice = self.choice
        if "ignore_downstream_trigger_rules" in changes and choice.kind == "short_circuit":
            ignore = bool(changes.pop("ignore_downstream_trigger_rules"))
            choice = replace(choice, ignore_downstream_trigger_rules=ignore)
        plain = super().override(**changes)
        return ChoosingDecorator(plain.function, plain.options, plain.explicit, choice)

    def _add_task(self, args: tuple[Any, ...], kwargs: dict[str, Any], mapping: Any = None) -> Task:
        added = super()._add_task(args, kwargs, mapping)
        if added.mapping is not None:
            raise DagDefinitionError(
                f"task {added.task_id}: a mapped @task.{self.choice.kind} is not supported"
            )
        added.choice = self.choice
        return added


def _choosing(kind: str, choice: Choice, python_callable: Any, options: dict[str, Any]) -> Any:
    parsed = task_options(f"@task.{kind}", options)
    if python_callable is not None:
        return ChoosingDecorator(python_callable, parsed, options, choice)
    return lambda function: ChoosingDecorator(function, parsed, options, choice)


def branch(python_callable: Callable[..., Any] | None = None, **options: Any) -> Any:
    """``@task.branch``: the task returns the id(s) to run next (a task or task group id, a
    list of them, or None); its other direct downstream tasks are skipped."""
    return _choosing("branch", Choice("branch"), python_callable, options)


def short_circuit(
    python_callable: Callable[..., Any] | None = None,
    *,
    ignore_downstream_trigger_rules: bool = True,
    **options: Any,
) -> Any:
    """``@task.short_circuit``: a falsy result skips what follows: everything downstream, or
    with ``ignore_downstream_trigger_rules=False`` the direct downstream tasks alone (the
    trigger rules decide the rest)."""
    choice = Choice("short_circuit", bool(ignore_downstream_trigger_rules))
    return _choosing("short_circuit", choice, python_callable, options)


def choice_structure(chooser: Task) -> dict[str, Any]:
    """The keys of a task's structure ``state.core.structure.TaskSpec`` reads for its choice."""
    choice: Choice | None = chooser.choice
    if choice is None:
        return {}
    return {
        "kind": choice.kind,
        "ignore_downstream_trigger_rules": choice.ignore_downstream_trigger_rules,
    }


task.branch = branch  # type: ignore[attr-defined]
task.short_circuit = short_circuit  # type: ignore[attr-defined]
