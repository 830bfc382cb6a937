"""``@setup`` / ``@teardown``, ``.as_setup()`` / ``.as_teardown(setups=...)`` and ``with
teardown(setup()):``: tasks that make and remove what the work between them uses, as in Airflow.

A teardown waits for everything upstream of it and runs when one of its setups succeeded,
whatever its work tasks did (trigger rule ``all_done_setup_success``, decided in
``state.engine.readiness``); its own state does not decide the run's unless
``on_failure_fail_dagrun``. Roles are authoring data only: the structure carries ``is_setup`` /
``is_teardown`` and the scheduler reads them there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from tradewind.branching import choice_structure
from tradewind.dependencies import link, roots_of
from tradewind.exceptions import DagDefinitionError
from tradewind.task import Task, TaskDecorator, TaskOptions, task_options
from tradewind.trigger_rules import TriggerRule

TEARDOWN_RULE = TriggerRule.ALL_DONE_SETUP_SUCCESS


def mark_setup(marked: Task) -> None:
    if marked.is_teardown:
        raise DagDefinitionError(f"task {marked.task_id} cannot be both a setup and a teardown")
    marked.is_setup = True


def mark_teardown(marked: Task, on_failure_fail_dagrun: bool = False) -> None:
    """``marked`` becomes a teardown: its rule ``all_done_setup_success``, as Airflow forces."""
    if marked.is_setup:
        raise DagDefinitionError(f"task {marked.task_id} cannot be both a setup and a teardown")
    rule = marked.options.trigger_rule
    if rule not in (TriggerRule.ALL_SUCCESS, TEARDOWN_RULE):
        raise DagDefinitionError(
            f"teardown task {marked.task_id}: trigger_rule must be {TEARDOWN_RULE}, got {rule}"
        )
    marked.is_teardown = True
    marked.on_failure_fail_dagrun = bool(on_failure_fail_dagrun)
    marked.options = replace(marked.options, trigger_rule=TEARDOWN_RULE)


def as_setup(result: Any) -> Any:
    """``t().as_setup()``: the task is a setup; returns what it was called on."""
    for marked in roots_of(result):
        mark_setup(marked)
    return result


def as_teardown(result: Any, setups: Any = None, on_failure_fail_dagrun: bool = False) -> Any:
    """``t().as_teardown(setups=s)``: the task is a teardown of ``setups`` (marked setups,
    and made upstream of it); returns what it was called on."""
    teardowns = roots_of(result)
    for marked in teardowns:
        mark_teardown(marked, on_failure_fail_dagrun)
    for made in roots_of(setups) if setups is not None else []:
        mark_setup(made)
        for teardown_task in teardowns:
            link(made, teardown_task)
    return result


@dataclass
class _Scope:
    """An open ``with`` block: its setups and teardowns, and the tasks the DAG had before it."""

    setups: list[Task]
    teardowns: list[Task]
    before: set[str] = field(default_factory=set)


_SCOPES: list[_Scope] = []


def enter_scope(result: Any) -> Any:
    """``with teardown_task(setup_task()):``: the tasks made inside run after the setups and
    before the teardowns (a setup alone, or a teardown alone, works the same way)."""
    [anchor] = roots_of(result)
    dag = anchor.dag
    if anchor.is_teardown:
        setups = [dag.tasks[t] for t in sorted(anchor.upstream_task_ids) if dag.tasks[t].is_setup]
        scope = _Scope(setups, [anchor])
    elif anchor.is_setup:
        after = [dag.tasks[t] for t in sorted(anchor.downstream_task_ids)]
        scope = _Scope([anchor], [t for t in after if t.is_teardown])
    else:
        raise DagDefinitionError(
            f"`with {anchor.task_id}:` needs a setup or a teardown task (@setup, @teardown)"
        )
    scope.before = set(dag.tasks)
    _SCOPES.append(scope)
    return result


def exit_scope(result: Any) -> None:
    """Wire the tasks made inside the block: setups before its roots, its leaves before the
    teardowns."""
    scope = _SCOPES.pop()
    dag = (scope.setups or scope.teardowns)[0].dag
    inside = {t: dag.tasks[t] for t in dag.tasks if t not in scope.before}
    for made in inside.values():
        if not made.upstream_task_ids & inside.keys():
            for setup_task in scope.setups:
                link(setup_task, made)
        if not made.downstream_task_ids & inside.keys():
            for teardown_task in scope.teardowns:
                link(made, teardown_task)


class RoleDecorator(TaskDecorator):
    """A ``TaskDecorator`` whose tasks are setups or teardowns (kept through ``.override``)."""

    def __init__(
        self,
        function: Callable[..., Any] | None,
        options: TaskOptions,
        explicit: Iterable[str],
        mark: Callable[[Task], None],
    ) -> None:
        super().__init__(function, options, explicit)
        self.mark = mark

    def override(self, **changes: Any) -> TaskDecorator:
        plain = super().override(**changes)
        return RoleDecorator(plain.function, plain.options, plain.explicit, self.mark)

    def _add_task(self, args: tuple[Any, ...], kwargs: dict[str, Any], mapping: Any = None) -> Task:
        added = super()._add_task(args, kwargs, mapping)
        self.mark(added)
        return added


def setup(python_callable: Callable[..., Any] | None = None, **options: Any) -> Any:
    """``@setup``: a TaskFlow task that is a setup (``@task`` arguments accepted)."""
    parsed = task_options("@setup", options)
    if python_callable is not None:
        return RoleDecorator(python_callable, parsed, options, mark_setup)
    return lambda function: RoleDecorator(function, parsed, options, mark_setup)


def teardown(
    python_callable: Callable[..., Any] | None = None,
    *,
    on_failure_fail_dagrun: bool = False,
    **options: Any,
) -> Any:
    """``@teardown``: a TaskFlow task that is a teardown; ``on_failure_fail_dagrun=True`` lets
    its failure fail the run."""
    parsed = task_options("@teardown", options)

    def mark(marked: Task) -> None:
        mark_teardown(marked, on_failure_fail_dagrun)

    if python_callable is not None:
        return RoleDecorator(python_callable, parsed, options, mark)
    return lambda function: RoleDecorator(function, parsed, options, mark)


def control_flow_structure(chooser: Task) -> dict[str, Any]:
    """The control-flow keys of a task's structure (``state.core.structure.TaskSpec``)."""
    roles = {
        "is_setup": chooser.is_setup,
        "is_teardown": chooser.is_teardown,
        "on_failure_fail_dagrun": chooser.on_failure_fail_dagrun,
    }
    return {**choice_structure(chooser), **{key: value for key, value in roles.items() if value}}
