"""The task side of the cross-DAG requests (``tradewind/standard/``'s ``CrossDagClient``).

A mixin of the task runner's ``Client``: each method is one request to the supervisor, which
reads or writes the other DAG's rows; the task process itself never reaches SQL.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from worker import wire as p


class CrossDagRequests:
    """``trigger_dag_run``, and the states of other DAGs' runs and task instances."""

    def request(self, message: p.Message | p.PreEncoded) -> p.Message:
        raise NotImplementedError  # the Client's, over its socket

    def trigger_dag_run(
        self,
        dag_id: str,
        run_id: str,
        conf: dict[str, Any],
        logical_date: dt.datetime | None,
        reset_dag_run: bool,
    ) -> str:
        """``created``, ``cleared`` (it existed, reset) or ``exists`` (it existed, left)."""
        message = p.TriggerDagRun(
            dag_id=dag_id,
            run_id=run_id,
            conf=conf,
            logical_date=logical_date,
            reset_dag_run=reset_dag_run,
        )
        reply = self.request(message)
        assert isinstance(reply, p.TriggerDagRunResult)
        return reply.outcome

    def get_dag_run_state(self, dag_id: str, run_id: str) -> str | None:
        reply = self.request(p.GetDagRunState(dag_id=dag_id, run_id=run_id))
        assert isinstance(reply, p.DagRunStateResult)
        return reply.state

    def get_dag_run_states(self, dag_id: str, logical_dates: list[dt.datetime]) -> list[str]:
        reply = self.request(p.GetDagRunStates(dag_id=dag_id, logical_dates=logical_dates))
        assert isinstance(reply, p.DagRunStatesResult)
        return reply.states

    def get_task_instance_states(
        self,
        dag_id: str,
        logical_dates: list[dt.datetime],
        task_ids: list[str] | None,
        task_group_id: str | None,
    ) -> list[tuple[str, str, int, str]]:
        message = p.GetTaskInstanceStates(
            dag_id=dag_id,
            logical_dates=logical_dates,
            task_ids=task_ids,
            task_group_id=task_group_id,
        )
        reply = self.request(message)
        assert isinstance(reply, p.TaskInstanceStatesResult)
        return reply.task_instances

    def get_dag_tasks(self, dag_id: str) -> tuple[list[str], list[str], bool] | None:
        """``(task ids, group ids, is paused)`` of ``dag_id``; None when it is unknown."""
        reply = self.request(p.GetDagTasks(dag_id=dag_id))
        assert isinstance(reply, p.DagTasksResult)
        return (reply.task_ids, reply.group_ids, reply.is_paused) if reply.found else None
