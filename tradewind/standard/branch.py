"""Operators that choose what runs after them: ``BaseBranchOperator`` and the choosing mix-in
every branch or short-circuit operator of the standard provider is built on.

An operator that chooses marks its task with the same ``Choice`` as ``@task.branch`` and
``@task.short_circuit`` (``tradewind/branching.py``): ``execute`` returns the ids to follow (or
the short circuit's condition), the task process sends them with its success, and the store
skips the rest, as in Airflow. A branch may name a task group: its tasks are followed.
"""

from __future__ import annotations

from typing import Any, NoReturn

from tradewind.branching import Choice
from tradewind.exceptions import DagDefinitionError
from tradewind.operators import BaseOperator


class ChoosingOperator(BaseOperator):
    """An operator whose result chooses what runs next: a branch unless ``choice`` says else."""

    def choice(self) -> Choice:
        return Choice("branch")

    def _join_dag(self) -> None:
        super()._join_dag()
        self.task.choice = self.choice()

    @classmethod
    def partial(cls, **kwargs: Any) -> NoReturn:
        # Each map index would choose for all the others: Airflow's result is no clearer.
        raise DagDefinitionError(
            f"{cls.__name__} {kwargs.get('task_id', '')}: a mapped {cls.__name__} is not "
            "supported; choose in one task, or map the tasks after it"
        )


class BaseBranchOperator(ChoosingOperator):
    """Subclass it and define ``choose_branch(self, context)``: it returns the task or task
    group id to follow, a list of them, or None (every direct downstream task is skipped)."""

    def __init__(self, **kwargs: Any) -> None:
        if type(self).choose_branch is BaseBranchOperator.choose_branch:
            raise DagDefinitionError(
                f"{type(self).__name__} must define choose_branch(self, context)"
            )
        super().__init__(**kwargs)

    def choose_branch(self, context: dict[str, Any]) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define choose_branch")

    def execute(self, context: dict[str, Any]) -> Any:
        chosen = self.choose_branch(context)
        print(f"branch {self.task_id}: following {chosen!r}", flush=True)
        return chosen
