"""The store's answers to the cross-DAG triggers (``WorkflowTrigger``, ``DagStateTrigger``):
the standard provider's ``CrossDagClient`` questions, read from ``state/`` in the triggerer."""

from __future__ import annotations

import datetime as dt

from state.core import statement_scope
from state.engine import dag_tasks_and_groups, run_state, run_states_at, task_states_at


class StoreCrossDag:
    def __init__(self, url: str) -> None:
        self.url = url

    def get_dag_run_state(self, dag_id: str, run_id: str) -> str | None:
        with statement_scope(self.url) as session:
            return run_state(session, dag_id, run_id)

    def get_dag_run_states(self, dag_id: str, logical_dates: list[dt.datetime]) -> list[str]:
        with statement_scope(self.url) as session:
            return run_states_at(session, dag_id, logical_dates)

    def get_task_instance_states(
        self,
        dag_id: str,
        logical_dates: list[dt.datetime],
        task_ids: list[str] | None,
        task_group_id: str | None,
    ) -> list[tuple[str, str, int, str]]:
        with statement_scope(self.url) as session:
            return task_states_at(session, dag_id, logical_dates, task_ids, task_group_id)

    def get_dag_tasks(self, dag_id: str) -> tuple[list[str], list[str], bool] | None:
        with statement_scope(self.url) as session:
            found = dag_tasks_and_groups(session, dag_id)
        if found is None:
            return None
        return list(found.task_ids), list(found.group_ids), bool(found.is_paused)
